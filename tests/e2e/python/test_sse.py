"""The shop over the legacy HTTP+SSE transport (`shop http --legacy-sse`, MCP 2024-11-05's
`GET /sse` stream and the `POST /messages` endpoint it announces), driven by the Python SDK's
`sse_client` with bearer tokens.

An SSE session is a 2025-11-25-style session (an `initialize` handshake on the stream), so the
client runs in `legacy` mode; the streamable-HTTP tests cover `auto`.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.sse import sse_client

from conftest import TEST_TIMEOUT_SECONDS
from test_http import ALICE, BOB, Server, start, token_file  # noqa: F401 (token_file: a fixture)
from test_shop import agent_error, ok, order_args

pytestmark = pytest.mark.anyio


@pytest.fixture
def server(token_file: Path) -> Iterator[Server]:  # noqa: F811
    served = start(token_file, "--legacy-sse")
    yield served
    if served.process.poll() is None:
        served.process.terminate()
        assert served.process.wait(15) == 0, "".join(served.stderr)


def sse_url(server: Server) -> str:
    return server.url.removesuffix("/mcp") + "/sse"


@asynccontextmanager
async def connect(server: Server, token: str, **client_options) -> AsyncIterator[Client]:
    transport = sse_client(sse_url(server), headers={"Authorization": f"Bearer {token}"})
    async with Client(transport, mode="legacy", **client_options) as client:
        with anyio.fail_after(TEST_TIMEOUT_SECONDS):
            yield client


async def test_calls_run_as_the_token_principal(server: Server) -> None:
    async with connect(server, ALICE) as client:
        assert client.protocol_version == "2025-11-25"
        tools = await client.list_tools()
        assert len(tools.tools) == 9
        order = ok(await client.call_tool("place_order", order_args()))
        assert order["placed_by"] == "alice"
        # Alice's token grants `confirm:cancel_order`.
        cancelled = ok(await client.call_tool("cancel_order", {"order_id": order["order_id"]}))
        assert cancelled["status"] == "cancelled"
    async with connect(server, BOB) as client:
        order = ok(await client.call_tool("place_order", order_args()))
        assert order["placed_by"] == "bob"
        refused = agent_error(
            await client.call_tool("cancel_order", {"order_id": order["order_id"]}),
            "CONFIRMATION_REQUIRED",
            status="rejected",
        )
        assert refused["category"] == "permission"


async def test_a_resent_request_id_replays_across_sse_sessions(server: Server) -> None:
    key = {"carmy/request_id": f"e2e-sse-{uuid.uuid4()}"}
    async with connect(server, ALICE) as client:
        first = ok(await client.call_tool("place_order", order_args(), meta=key))
    async with connect(server, ALICE) as client:
        replay = ok(await client.call_tool("place_order", order_args(), meta=key), status="replayed")
        assert replay["order_id"] == first["order_id"]
        orders = ok(await client.call_tool("list_orders", {}))
        assert [o["order_id"] for o in orders["orders"]] == [first["order_id"]]


async def test_progress_arrives_on_the_stream(server: Server) -> None:
    updates: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append(progress)

    async with connect(server, ALICE) as client:
        result = await client.call_tool("sales_report", {"seconds": 1}, progress_callback=on_progress)
        assert not result.is_error, result.content
        assert len(updates) >= 2, f"progress notifications received: {updates}"
        assert updates == sorted(updates)


async def test_without_a_valid_token_there_is_no_stream(server: Server) -> None:
    async with httpx2.AsyncClient(timeout=10) as http:
        for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}):
            response = await http.get(sse_url(server), headers={"Accept": "text/event-stream", **headers})
            assert response.status_code == 401, response.text
            assert response.headers["www-authenticate"].startswith("Bearer")
    # And the server goes on serving whoever has a token.
    async with connect(server, BOB) as client:
        assert len((await client.list_tools()).tools) == 9
