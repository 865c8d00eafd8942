"""The shop served by `shop http` (streamable HTTP with bearer tokens), driven by the Python MCP
client in both modes (`auto`: 2026-07-28, stateless; `legacy`: 2025-11-25 with a session).

Each test starts its own `shop http --addr 127.0.0.1:0` and reads the port from the
`listening on http://ADDR/mcp` line it prints on stderr.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from conftest import EXPECTED_VERSION, TEST_TIMEOUT_SECONDS, shop_bin
from test_shop import ok, order_args

pytestmark = pytest.mark.anyio

ALICE = "e2e-alice-token-" + uuid.uuid4().hex
BOB = "e2e-bob-token-" + uuid.uuid4().hex


class Server:
    def __init__(self, process: subprocess.Popen[str], url: str, stderr: list[str]) -> None:
        self.process = process
        self.url = url
        self.stderr = stderr


@pytest.fixture
def token_file() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "tokens"
        path.write_text(f"# token principal grants...\n{ALICE} alice confirm:cancel_order\n{BOB} bob\n")
        path.chmod(0o600)
        yield path


def start(token_file: Path, *extra: str) -> Server:
    process = subprocess.Popen(
        [str(shop_bin()), "http", "--addr", "127.0.0.1:0", "--token-file", str(token_file), *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    lines: list[str] = []
    for line in process.stderr:
        lines.append(line)
        if line.startswith("listening on "):
            url = line.split()[-1]
            break
    else:
        process.wait(5)
        pytest.fail(f"shop http did not start: {''.join(lines)}")
    # Keep draining stderr so the server never blocks on it.
    threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True).start()
    return Server(process, url, lines)


@pytest.fixture(params=["sessions", "stateless"])
def server(request: pytest.FixtureRequest, token_file: Path) -> Iterator[Server]:
    served = start(token_file, *(["--stateless"] if request.param == "stateless" else []))
    yield served
    if served.process.poll() is None:
        served.process.terminate()
        assert served.process.wait(15) == 0, "".join(served.stderr)


@asynccontextmanager
async def connect(server: Server, mode: str, token: str, *, terminate: bool = True) -> AsyncIterator[Client]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    transport = streamable_http_client(server.url, http_client=http, terminate_on_close=terminate)
    async with http, Client(transport, mode=mode) as client:
        with anyio.fail_after(TEST_TIMEOUT_SECONDS):
            yield client


async def test_calls_run_as_the_token_principal(server: Server, mode: str) -> None:
    async with connect(server, mode, ALICE) as client:
        assert client.protocol_version == EXPECTED_VERSION[mode]
        tools = await client.list_tools()
        assert len(tools.tools) == 9
        order = ok(await client.call_tool("place_order", order_args()))
        assert order["placed_by"] == "alice"
        # Alice's token grants `confirm:cancel_order`.
        cancelled = ok(await client.call_tool("cancel_order", {"order_id": order["order_id"]}))
        assert cancelled["status"] == "cancelled"
    async with connect(server, mode, BOB) as client:
        order = ok(await client.call_tool("place_order", order_args()))
        assert order["placed_by"] == "bob"
        refused = await client.call_tool("cancel_order", {"order_id": order["order_id"]})
        assert refused.is_error


async def test_idempotency_keys_are_scoped_by_principal(server: Server, mode: str) -> None:
    key = {"carmy/request_id": f"e2e-{uuid.uuid4()}"}
    async with connect(server, mode, ALICE) as alice:
        first = ok(await alice.call_tool("place_order", order_args(), meta=key))
        replay = ok(await alice.call_tool("place_order", order_args(), meta=key), status="replayed")
        assert replay["order_id"] == first["order_id"]
    async with connect(server, mode, BOB) as bob:
        own = ok(await bob.call_tool("place_order", order_args(), meta=key))
        assert own["order_id"] != first["order_id"]


async def test_requests_without_a_valid_token_are_refused(server: Server) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_orders"}}
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient() as http:
        for authorization in (None, "Bearer wrong-token-0123456789", f"Basic {ALICE}"):
            sent = dict(headers, **({"Authorization": authorization} if authorization else {}))
            response = await http.post(server.url, json=body, headers=sent)
            assert response.status_code == 401, response.text
            assert response.headers["www-authenticate"].startswith("Bearer")
        health = await http.get(server.url.removesuffix("/mcp") + "/health")
        assert health.status_code == 200 and health.json() == {"status": "ok"}


async def test_sigterm_lets_a_running_call_finish(token_file: Path) -> None:
    """SIGTERM mid-call: the call finishes within the grace period, then the process exits 0.

    Raw HTTP: the MCP client opens new connections mid-call, which a stopping server refuses.
    """
    served = start(token_file, "--grace", "10", "--stateless")
    try:
        call = {
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "sales_report", "arguments": {"seconds": 2}},
        }
        headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {ALICE}"}
        async with httpx2.AsyncClient(timeout=20) as http:
            async with anyio.create_task_group() as group:
                answer: dict[str, Any] = {}

                async def post() -> None:
                    answer["response"] = await http.post(served.url, json=call, headers=headers)

                group.start_soon(post)
                await anyio.sleep(0.7)
                os.kill(served.process.pid, signal.SIGTERM)
        response = answer["response"]
        assert response.status_code == 200, response.text
        result = response.json()["result"]
        assert result["isError"] is False
        assert result["structuredContent"] == {"orders": 0, "revenue_cents": 0, "cancelled": 0}
        assert served.process.wait(15) == 0, "".join(served.stderr)
    finally:
        if served.process.poll() is None:
            served.process.kill()
