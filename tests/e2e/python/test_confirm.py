"""Confirmation through the client: `shop mcp --confirm-via-client`, driven by the Python MCP
client's `elicitation_callback`.

Both modes: `legacy` (2025-11-25, the server sends `elicitation/create`) and `auto` (2026-07-28,
the server answers `input_required` with a sealed `request_state` and the client retries).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitResult, InputRequiredResult

from conftest import TEST_TIMEOUT_SECONDS, shop_bin, shop_env
from test_shop import agent_error, carmy_meta, ok, order_args, request_id

pytestmark = pytest.mark.anyio


class Human:
    """An elicitation callback answering every question the same way, and remembering them."""

    def __init__(self, action: str = "accept", approve: bool | None = True) -> None:
        self.action = action
        self.approve = approve
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: Any) -> ElicitResult:
        self.asked.append(params.message)
        schema = params.requested_schema
        schema = schema.model_dump() if hasattr(schema, "model_dump") else schema
        assert schema["required"] == ["approve"], schema
        content = None if self.approve is None else {"approve": self.approve}
        return ElicitResult(action=self.action, content=content)


@asynccontextmanager
async def shop(mode: str, *, grants: tuple[str, ...] = (), **client_options: Any) -> AsyncIterator[Client]:
    args = ["mcp", "--confirm-via-client"]
    for grant in grants:
        args += ["--grant", grant]
    server = StdioServerParameters(command=str(shop_bin()), args=args, env=shop_env())
    client_options.setdefault("read_timeout_seconds", 20)
    async with Client(server, mode=mode, **client_options) as client:
        with anyio.fail_after(TEST_TIMEOUT_SECONDS):
            yield client


async def placed_order(client: Client) -> dict[str, Any]:
    return ok(await client.call_tool("place_order", order_args()))


async def order_status(client: Client, order_id: str) -> str:
    return ok(await client.call_tool("get_order", {"order_id": order_id}))["status"]


async def test_approved_call_runs_once(mode):
    human = Human()
    async with shop(mode, elicitation_callback=human) as client:
        order = await placed_order(client)
        cancelled = ok(await client.call_tool("cancel_order", {"order_id": order["order_id"]}))
        assert cancelled["status"] == "cancelled"
        assert human.asked == [f'Allow `cancel_order` (destructive) with {{order_id: "{order["order_id"]}"}}?']
        assert await order_status(client, order["order_id"]) == "cancelled"
        # Stock returned once.
        assert ok(await client.call_tool("get_product", {"id": "sku-001"}))["stock"] == 5


@pytest.mark.parametrize(
    ("action", "approve"), [("decline", None), ("cancel", None), ("accept", False)]
)
async def test_declined_call_does_not_run(mode, action, approve):
    human = Human(action, approve)
    async with shop(mode, elicitation_callback=human) as client:
        order = await placed_order(client)
        refused = await client.call_tool("cancel_order", {"order_id": order["order_id"]})
        error = agent_error(refused, "CONFIRMATION_DECLINED", status="rejected")
        assert error["category"] == "permission"
        assert len(human.asked) == 1
        assert await order_status(client, order["order_id"]) == "placed"


async def test_question_names_the_declared_target_whatever_keys_are_added(mode):
    # Keys the tool does not declare, named to sort before `order_id`, each long enough to fill
    # a summary: the question still names the order, and says what it left out.
    human = Human("decline", None)
    async with shop(mode, elicitation_callback=human) as client:
        order = await placed_order(client)
        args = {"order_id": order["order_id"], **{f"a{n:02}": "x" * 100 for n in range(40)}}
        refused = await client.call_tool("cancel_order", args)
        agent_error(refused, "CONFIRMATION_DECLINED", status="rejected")
        assert human.asked == [
            f'Allow `cancel_order` (destructive) with {{order_id: "{order["order_id"]}"}}? '
            "Not shown: 40 keys the tool does not declare."
        ]
        assert await order_status(client, order["order_id"]) == "placed"


async def test_client_without_elicitation_gets_confirmation_required(mode):
    async with shop(mode) as client:
        order = await placed_order(client)
        refused = await client.call_tool("cancel_order", {"order_id": order["order_id"]})
        agent_error(refused, "CONFIRMATION_REQUIRED", status="rejected")
        assert await order_status(client, order["order_id"]) == "placed"


async def test_host_grant_takes_precedence(mode):
    human = Human("decline", None)
    async with shop(mode, grants=("confirm:cancel_order",), elicitation_callback=human) as client:
        order = await placed_order(client)
        ok(await client.call_tool("cancel_order", {"order_id": order["order_id"]}))
        assert human.asked == []


async def test_round_trip_is_one_idempotent_call(mode):
    human = Human()
    async with shop(mode, elicitation_callback=human) as client:
        order = await placed_order(client)
        key = {"carmy/request_id": request_id()}
        args = {"order_id": order["order_id"]}
        first = await client.call_tool("cancel_order", args, meta=key)
        ok(first)
        # Retried by the host with the same id: an idempotent tool takes no claim, so the retry
        # is asked again and runs again, answering the same and putting nothing back twice.
        again = await client.call_tool("cancel_order", args, meta=key)
        assert ok(again) == first.structured_content
        assert carmy_meta(again)["carmy/execution_id"] != carmy_meta(first)["carmy/execution_id"]
        assert len(human.asked) == 2
        assert ok(await client.call_tool("get_product", {"id": "sku-001"}))["stock"] == 5


async def manual_first_round(client: Client, args: dict[str, Any]) -> InputRequiredResult:
    first = await client.session.call_tool("cancel_order", args, allow_input_required=True)
    assert isinstance(first, InputRequiredResult), first
    assert set(first.input_requests or {}) == {"carmy/confirm"}
    assert first.request_state
    return first


APPROVE = {"carmy/confirm": ElicitResult(action="accept", content={"approve": True})}


async def retry(client: Client, args: dict[str, Any], state: str) -> Any:
    return await client.session.call_tool(
        "cancel_order", args, input_responses=APPROVE, request_state=state, allow_input_required=True
    )


async def refused_state(client: Client, args: dict[str, Any], state: str) -> str:
    """A retry whose state fails verification: -32602 before anything runs."""
    with pytest.raises(MCPError) as refused:
        await retry(client, args, state)
    assert refused.value.error.code == -32602, refused.value.error
    assert refused.value.error.message.startswith("`requestState` is not valid"), refused.value.error
    return refused.value.error.message


def tamper(state: str, index: int) -> str:
    replacement = "B" if state[index] == "A" else "A"
    return state[:index] + replacement + state[index + 1 :]


@pytest.mark.parametrize("mode", ["auto"])
async def test_tampered_request_state_is_refused(mode):
    async with shop(mode, elicitation_callback=Human()) as client:
        order = await placed_order(client)
        args = {"order_id": order["order_id"]}
        first = await manual_first_round(client, args)
        state = first.request_state
        for index in (0, len(state) // 2, len(state) - 1):
            await refused_state(client, args, tamper(state, index))
        assert await order_status(client, order["order_id"]) == "placed"
        # The untouched state still works, once.
        ok(await retry(client, args, state))
        assert await order_status(client, order["order_id"]) == "cancelled"
        replayed = await retry(client, args, state)
        agent_error(replayed, "CONFIRMATION_INVALID", status="rejected")


@pytest.mark.parametrize("mode", ["auto"])
async def test_request_state_moved_to_another_order_is_refused(mode):
    async with shop(mode, elicitation_callback=Human()) as client:
        mine = await placed_order(client)
        other = await placed_order(client)
        first = await manual_first_round(client, {"order_id": mine["order_id"]})
        moved = await refused_state(client, {"order_id": other["order_id"]}, first.request_state)
        assert "made for another call" in moved
        assert await order_status(client, other["order_id"]) == "placed"
        assert await order_status(client, mine["order_id"]) == "placed"


async def test_progress_alongside_confirmation(mode):
    updates: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        assert total == 10
        updates.append(progress)

    async with shop(mode, elicitation_callback=Human()) as client:
        started = time.monotonic()
        result = await client.call_tool("sales_report", {"seconds": 1}, progress_callback=on_progress)
        assert ok(result) == {"orders": 0, "revenue_cents": 0, "cancelled": 0}
        assert time.monotonic() - started >= 0.9
        assert len(updates) >= 2 and updates == sorted(updates), updates
