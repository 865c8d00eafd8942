"""Protocol logging: the shop's tools log with `tracing`, and a client that asks for a level gets
those events as `notifications/message` - with `logging/setLevel` on 2025-11-25, with
`_meta["io.modelcontextprotocol/logLevel"]` on each request on 2026-07-28 - and nothing otherwise.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from mcp_types import LoggingMessageNotificationParams

from test_shop import ADDRESS, ok

pytestmark = pytest.mark.anyio

ORDER = {"lines": [{"product_id": "sku-002", "quantity": 1}], "ship_to": ADDRESS}


class Received:
    """A `logging_callback` that keeps what it is sent."""

    def __init__(self) -> None:
        self.messages: list[LoggingMessageNotificationParams] = []

    async def __call__(self, params: LoggingMessageNotificationParams) -> None:
        self.messages.append(params)

    def data(self) -> list[Any]:
        return [message.data for message in self.messages]


async def ask_for(client: Any, mode: str, level: str) -> None:
    """Asks for `level` the way the lifecycle allows; on 2026-07-28 the level is in the client's
    `log_level` already, stamped on every request."""
    if mode == "legacy":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated by SEP-2577, still part of 2025-11-25
            await client.session.set_logging_level(level)


async def test_a_tool_logs_to_the_client_that_asks(connect, mode):
    received = Received()
    async with connect(logging_callback=received, log_level="info") as client:
        await ask_for(client, mode, "info")
        order = ok(await client.call_tool("place_order", ORDER))
        # Sent before the answer, so already here.
        [message] = received.messages
        assert message.level == "info"
        assert message.logger == "shop::orders"
        assert message.data == {
            "message": "order placed",
            "order_id": order["order_id"],
            "total_cents": order["total_cents"],
        }


async def test_nothing_is_sent_to_a_client_that_did_not_ask(connect):
    received = Received()
    async with connect(logging_callback=received) as client:
        ok(await client.call_tool("place_order", ORDER))
        ok(await client.call_tool("sales_report", {"seconds": 1}))
    assert received.messages == []


async def test_events_below_the_level_asked_for_are_not_sent(connect, mode):
    received = Received()
    async with connect(logging_callback=received, log_level="warning") as client:
        await ask_for(client, mode, "warning")
        ok(await client.call_tool("place_order", ORDER))
    assert received.messages == []


async def test_each_call_logs_its_own_events(connect, mode):
    received = Received()
    async with connect(
        grants=("confirm:cancel_order",), logging_callback=received, log_level="info"
    ) as client:
        await ask_for(client, mode, "info")
        order = ok(await client.call_tool("place_order", ORDER))
        ok(await client.call_tool("cancel_order", {"order_id": order["order_id"]}))
        ok(await client.call_tool("sales_report", {"seconds": 1}))
    assert [data["message"] for data in received.data()] == [
        "order placed",
        "order cancelled",
        "sales report computed",
    ]
    assert received.data()[1]["order_id"] == order["order_id"]
    assert received.data()[2] == {"message": "sales report computed", "orders": 0, "cancelled": 1}
