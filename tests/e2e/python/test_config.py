"""The shop run from a configuration file (`shop serve --config shop.yaml`): the file picks the
transport (streamable HTTP), the port, the token file and the store, and the Python client
talks to what it serves; `shop config` reports where each value came from. SIGHUP reads the
file again: `tool_settings.disabled` takes a tool out while the shop serves, and puts it back.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types import ToolListChangedNotification

from conftest import EXPECTED_VERSION, TEST_TIMEOUT_SECONDS, shop_bin
from test_http import ALICE, start, token_file  # noqa: F401 (token_file: a fixture)
from test_shop import agent_error, ok, order_args

pytestmark = pytest.mark.anyio


def write_config(directory: Path, token_file: Path) -> Path:  # noqa: F811
    path = directory / "shop.yaml"
    path.write_text(
        "server:\n"
        "  transport: http\n"
        "  host: 127.0.0.1\n"
        "  port: 0\n"
        "security:\n"
        f"  token_file: {token_file}\n"
        "logging:\n"
        "  level: info\n"
        "  format: compact\n"
    )
    return path


def test_config_names_the_file_for_each_value_it_sets(tmp_path: Path, token_file: Path) -> None:  # noqa: F811
    config = write_config(tmp_path, token_file)
    shown = subprocess.run(
        [str(shop_bin()), "config", "--config", str(config), "--json", "-p", "0"],
        capture_output=True, text=True, check=True, timeout=20,
    )
    entries = {entry["key"]: entry for entry in json.loads(shown.stdout)}
    assert entries["server.transport"] == {"key": "server.transport", "value": "http", "from": str(config)}
    assert entries["server.port"]["from"] == "--port"
    assert entries["security.token_file"]["value"] == str(token_file)
    assert entries["server.max_sessions"]["from"] == "default"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_client_talks_to_the_transport_the_file_picks(
    tmp_path: Path, token_file: Path, mode: str  # noqa: F811
) -> None:
    config = write_config(tmp_path, token_file)
    process = subprocess.Popen(
        [str(shop_bin()), "serve", "--config", str(config)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert process.stderr is not None
        lines: list[str] = []
        for line in process.stderr:
            lines.append(line)
            if line.startswith("listening on "):
                url = line.split()[-1]
                break
        else:
            pytest.fail(f"shop serve did not start: {''.join(lines)}")
        threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True).start()

        http = create_mcp_http_client(headers={"Authorization": f"Bearer {ALICE}"})
        async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            with anyio.fail_after(TEST_TIMEOUT_SECONDS):
                assert client.protocol_version == EXPECTED_VERSION[mode]
                order = ok(await client.call_tool("place_order", order_args()))
                assert order["placed_by"] == "alice"
        # `logging.level: info` in the file: the call was logged, in the compact format.
        with anyio.fail_after(5):
            while not any("place_order" in line for line in lines):
                await anyio.sleep(0.05)
    finally:
        process.terminate()
        assert process.wait(15) == 0, "".join(lines)


async def test_the_file_s_access_rules_hide_tools_and_refuse_their_calls(connect, tmp_path: Path) -> None:
    """Over stdio: `tool_settings.allowed_tools` holds every caller to the reads and one write."""
    config = tmp_path / "shop.toml"
    config.write_text('[tool_settings]\nallowed_tools = ["effect:read", "place_order"]\n')
    async with connect(args=("--config", str(config))) as client:
        listing = await client.list_tools()
        names = sorted(tool.name for tool in listing.tools)
        assert names == [
            "get_order", "get_product", "list_orders", "place_order", "sales_report", "search_products",
        ]
        placed = ok(await client.call_tool("place_order", order_args()))
        refused = await client.call_tool("cancel_order", {"order_id": placed["order_id"]})
        error = agent_error(refused, "TOOL_NOT_ALLOWED", "rejected")
        assert error["category"] == "permission"
        assert error["details"] == {"tool": "cancel_order"}
        # Nothing was cancelled, and the session goes on.
        order = ok(await client.call_tool("get_order", {"order_id": placed["order_id"]}))
        assert order["status"] != "cancelled"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_sighup_on_shop_http_takes_a_tool_out_and_puts_it_back(
    tmp_path: Path, token_file: Path, mode: str  # noqa: F811
) -> None:
    config = tmp_path / "shop.toml"
    config.write_text("[tool_settings]\ndisabled = []\n")
    server = start(token_file, "--config", str(config))
    told = {"count": 0}

    async def on_message(message: Any) -> None:
        # 2025-11-25: told unsolicited, on the session's stream.
        if isinstance(message, ToolListChangedNotification):
            told["count"] += 1

    async def names(client: Client) -> set[str]:
        return {tool.name for tool in (await client.list_tools()).tools}

    async def hang_up(client: Client, text: str) -> None:
        config.write_text(text)
        if EXPECTED_VERSION[mode] == "2025-11-25":
            before = told["count"]
            os.kill(server.process.pid, signal.SIGHUP)
            while told["count"] == before:
                await anyio.sleep(0.02)
        else:
            # 2026-07-28: told on the stream the client opened for it.
            async with client.listen(tools_list_changed=True) as subscription:
                os.kill(server.process.pid, signal.SIGHUP)
                assert await subscription.__anext__() == ToolsListChanged()

    try:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {ALICE}"})
        transport = streamable_http_client(server.url, http_client=http)
        async with http, Client(transport, mode=mode, message_handler=on_message) as client:
            with anyio.fail_after(TEST_TIMEOUT_SECONDS):
                assert client.protocol_version == EXPECTED_VERSION[mode]
                assert "send_receipt" in await names(client)

                await hang_up(client, '[tool_settings]\ndisabled = ["send_receipt"]\n')
                listed = await names(client)
                assert "send_receipt" not in listed and "search_products" in listed
                with pytest.raises(MCPError) as refused:
                    await client.call_tool("send_receipt", {"order_id": "ord-none", "email": "a@example.com"})
                assert refused.value.code == -32602
                assert refused.value.data["error"]["code"] == "TOOL_NOT_FOUND", refused.value.data

                await hang_up(client, "[tool_settings]\ndisabled = []\n")
                assert "send_receipt" in await names(client)
                result = await client.call_tool("send_receipt", {"order_id": "ord-none", "email": "a@example.com"})
                assert result is not None
    finally:
        server.process.terminate()
        assert server.process.wait(15) == 0, "".join(server.stderr)
