"""Fixtures for the e2e tests: a fresh `shop mcp` process per test, driven by the official
Python MCP client (`mcp` on PyPI) in both of its lifecycles.

- `mode="auto"`: `server/discover`, then the initialize-less 2026-07-28 protocol;
- `mode="legacy"`: the 2025-11-25 `initialize` handshake.

The server binary is `$SHOP_BIN`, or `target/release/shop` at the root of the repository.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

REPO_ROOT = Path(__file__).resolve().parents[3]

#: No test needs more; a hung server or client fails the test instead of hanging the run.
TEST_TIMEOUT_SECONDS = 30

#: The protocol version each client mode must end up speaking with the shop.
EXPECTED_VERSION = {"auto": "2026-07-28", "legacy": "2025-11-25"}


def shop_bin() -> Path:
    path = Path(os.environ.get("SHOP_BIN") or REPO_ROOT / "target" / "release" / "shop")
    if not path.is_file():
        pytest.exit(
            f"shop binary not found at {path}: run tests/e2e/run.sh, "
            "or `cargo build --release -p shop`, or set SHOP_BIN",
            returncode=2,
        )
    return path


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


Connect = Callable[..., AbstractAsyncContextManager[Client]]


@pytest.fixture
def connect(mode: str) -> Connect:
    """`async with connect() as client`: a fresh server process and a connected client.

    `grants` become `--grant` options of `shop mcp` (host grants), `args` more of its arguments;
    other keyword arguments go to `mcp.Client` (callbacks, ...).
    """
    binary = shop_bin()

    @asynccontextmanager
    async def _connect(
        *, grants: tuple[str, ...] = (), args: tuple[str, ...] = (), **client_options: Any
    ) -> AsyncIterator[Client]:
        args = ["mcp", *args]
        for grant in grants:
            args += ["--grant", grant]
        server = StdioServerParameters(command=str(binary), args=args)
        client_options.setdefault("read_timeout_seconds", 20)
        async with Client(server, mode=mode, **client_options) as client:
            with anyio.fail_after(TEST_TIMEOUT_SECONDS):
                yield client

    return _connect
