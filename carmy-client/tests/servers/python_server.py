"""A small MCP server written with the official Python SDK (PyPI `mcp`), for carmy's tests:
one of each thing `carmy client` shows, so that a client built on rmcp is checked against a
server that is not."""

import base64

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import Completion

server = MCPServer("python-sdk-server")

#: A 1x1 PNG: a real image for `[image/png, N bytes]` and `-o FILE`.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def pixel() -> Image:
    """A one-pixel PNG."""
    return Image(data=PIXEL, format="png")


@server.tool()
def fail(reason: str) -> str:
    """Always fails, with the reason given (a `ToolError` reaches the client as it is)."""
    raise ToolError(reason)


@server.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Count to `steps`, reporting progress, then log that it is done."""
    for step in range(1, steps + 1):
        await anyio.sleep(0.05)
        await ctx.report_progress(step, steps, "counting")
    await ctx.info("slow is done")
    return f"counted to {steps}"


@server.resource("memo://greeting", mime_type="text/plain")
def greeting() -> str:
    """A fixed greeting."""
    return "hello from python"


@server.resource("memo://pixel.png", mime_type="image/png")
def pixel_file() -> bytes:
    """The same PNG, as a resource: bytes travel as a base64 blob."""
    return PIXEL


@server.resource("memo://notes/{name}")
def note(name: str) -> str:
    """A note by name."""
    return f"note {name}"


@server.prompt()
def review(code: str) -> str:
    """Ask for a review of some code."""
    return f"Please review:\n{code}"


@server.completion()
async def complete(ref, argument, context):
    # The same names for any argument of any prompt or template.
    names = ["alpha", "beta", "alpine"]
    return Completion(values=[name for name in names if name.startswith(argument.value)])


if __name__ == "__main__":
    server.run()
