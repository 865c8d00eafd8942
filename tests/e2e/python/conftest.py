"""Fixtures for the e2e tests: a fresh `shop mcp` process per test, driven by the official
Python MCP client (`mcp` on PyPI) in both of its lifecycles.

- `mode="auto"`: `server/discover`, then the initialize-less 2026-07-28 protocol;
- `mode="legacy"`: the 2025-11-25 `initialize` handshake.

The server binary is `$SHOP_BIN`, or `target/release/shop` at the root of the repository.
Every test gets its own data directory (`$XDG_DATA_HOME`), so the shop's default store — an
SQLite file holding its orders and stock — starts empty for each test, as on a fresh machine.
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


@pytest.fixture(autouse=True)
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's data directory: servers it starts keep their default store there."""
    path = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(path))
    return path


def shop_env() -> dict[str, str]:
    """The environment a stdio server needs on top of the client's defaults (which do not
    pass `XDG_DATA_HOME` through): this test's data directory."""
    return {"XDG_DATA_HOME": os.environ["XDG_DATA_HOME"]}


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
        server = StdioServerParameters(command=str(binary), args=args, env=shop_env())
        client_options.setdefault("read_timeout_seconds", 20)
        async with Client(server, mode=mode, **client_options) as client:
            with anyio.fail_after(TEST_TIMEOUT_SECONDS):
                yield client

    return _connect
