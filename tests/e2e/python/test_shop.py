"""The shop example served by `shop mcp`, driven end to end by the Python MCP client.

Every test runs twice, once per client mode (`auto`: 2026-07-28 through `server/discover`;
`legacy`: the 2025-11-25 `initialize` handshake), each time against a fresh server process.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, ProgressNotification, TextContent

from conftest import EXPECTED_VERSION

pytestmark = pytest.mark.anyio

#: Each tool's declared effect and idempotency, as the shop's sources declare them.
TOOLS = {
    "search_products": ("read", True),
    "get_product": ("read", True),
    "place_order": ("write", False),
    "get_order": ("read", True),
    "list_orders": ("read", True),
    "send_receipt": ("external_write", False),
    "cancel_order": ("destructive", True),
    "sales_report": ("read", True),
    "quote_delivery": ("none", False),
}

ADDRESS = {
    "name": "Ada Lovelace",
    "street": "12 St James's Square",
    "city": "London",
    "postal_code": "SW1Y 4JH",
    "country": "GB",
}


def order_args(product_id: str = "sku-001", quantity: int = 2, **extra: Any) -> dict[str, Any]:
    return {"lines": [{"product_id": product_id, "quantity": quantity}], "ship_to": ADDRESS, **extra}


def request_id() -> str:
    return f"e2e-{uuid.uuid4()}"


def text_json(result: CallToolResult) -> Any:
    """The JSON in the result's single text block."""
    texts = [block for block in result.content if isinstance(block, TextContent)]
    assert len(texts) == 1, f"expected one text block, got {result.content!r}"
    return json.loads(texts[0].text)


def carmy_meta(result: CallToolResult) -> dict[str, Any]:
    meta = result.meta or {}
    execution_id = meta.get("carmy/execution_id")
    assert isinstance(execution_id, str) and execution_id, f"no carmy/execution_id in {meta!r}"
    assert isinstance(meta.get("carmy/status"), str), f"no carmy/status in {meta!r}"
    return dict(meta)


def ok(result: CallToolResult, status: str = "succeeded") -> dict[str, Any]:
    """The structured content of a successful result, after checking its envelope."""
    assert not result.is_error, f"tool failed: {result.content!r}"
    assert isinstance(result.structured_content, dict), "success without structuredContent"
    assert text_json(result) == result.structured_content, "text block differs from structuredContent"
    meta = carmy_meta(result)
    assert meta["carmy/status"] == status
    assert "carmy/error" not in meta
    return result.structured_content


def agent_error(result: CallToolResult, code: str, status: str) -> dict[str, Any]:
    """The error object of an AgentError result, after checking its envelope."""
    assert result.is_error, f"expected {code}, got a success: {result.structured_content!r}"
    assert result.structured_content is None, "an error result must not carry structuredContent"
    envelope = text_json(result)
    assert set(envelope) == {"error"}, envelope
    error = envelope["error"]
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["category"], str) and error["category"]
    assert isinstance(error["retryable"], bool)
    meta = carmy_meta(result)
    assert meta.get("carmy/error") == error, "_meta carmy/error differs from the text envelope"
    assert meta["carmy/status"] == status
    return error


def walk_schema(schema: Any, path: str = "#") -> list[str]:
    """Everything in `schema` that some clients reject: `$ref`, `$defs`/`definitions`, type
    unions with null."""
    problems: list[str] = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("$ref", "$defs", "definitions"):
                problems.append(f"{path}/{key}")
            if key == "type" and isinstance(value, list):
                problems.append(f"{path}/type is a list {value!r}")
            problems += walk_schema(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for index, item in enumerate(schema):
            problems += walk_schema(item, f"{path}/{index}")
    return problems


async def test_negotiates_the_expected_protocol(connect, mode):
    async with connect() as client:
        assert client.protocol_version == EXPECTED_VERSION[mode]
        assert client.server_capabilities.tools is not None


async def test_tools_list_states_effects(connect, mode):
    async with connect() as client:
        listing = await client.list_tools()
        tools = {tool.name: tool for tool in listing.tools}
        assert set(tools) == set(TOOLS)
        assert listing.next_cursor is None
        if mode == "auto":
            # The 2026-07-28 cache hint; the client drops it on 2025-11-25 sessions.
            assert "ttl_ms" in listing.model_fields_set, "tools/list has no ttlMs"
            assert listing.ttl_ms == 60_000
        for name, (effect, idempotent) in TOOLS.items():
            tool = tools[name]
            hints = tool.annotations
            assert hints is not None, f"{name}: no annotations"
            # All four hints explicit, false included: absent destructive/openWorld mean true.
            stated = hints.model_dump(by_alias=True, exclude_unset=True)
            for hint in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"):
                assert isinstance(stated.get(hint), bool), f"{name}: {hint} not stated: {stated}"
            assert hints.read_only_hint is (effect in ("none", "read")), name
            assert hints.destructive_hint is (effect == "destructive"), name
            assert hints.open_world_hint is (effect == "external_write"), name
            assert hints.idempotent_hint is idempotent, name
            meta = tool.meta or {}
            assert meta.get("carmy/effect") == effect, f"{name}: {meta}"
            expected_confirmation = "required" if effect == "destructive" else "none"
            assert meta.get("carmy/confirmation") == expected_confirmation, f"{name}: {meta}"
            assert isinstance(meta.get("carmy/parallel_safe"), bool), f"{name}: {meta}"
            # Every shop tool returns an object, so every one declares its output.
            assert tool.input_schema.get("type") == "object", name
            assert tool.output_schema is not None, f"{name}: no outputSchema"
            assert tool.output_schema.get("type") == "object", name
            for kind, schema in (("inputSchema", tool.input_schema), ("outputSchema", tool.output_schema)):
                assert walk_schema(schema) == [], f"{name} {kind} is not portable: {walk_schema(schema)}"
                jsonschema.Draft202012Validator.check_schema(schema)


async def test_read_tool_returns_valid_structured_content(connect):
    async with connect() as client:
        listing = await client.list_tools()
        schemas = {tool.name: tool.output_schema for tool in listing.tools}
        # The client checks structuredContent against outputSchema; so does this test.
        result = await client.call_tool("search_products", {"query": "mouse"})
        found = ok(result)
        jsonschema.validate(found, schemas["search_products"])
        ids = [product["id"] for product in found["products"]]
        assert ids == ["sku-001", "sku-002", "sku-003", "sku-004"]
        assert found["total"] == 4
        for product in found["products"]:
            assert "mouse" in (product["name"] + " " + " ".join(product["tags"])).lower()

        product = ok(await client.call_tool("get_product", {"id": "sku-002"}))
        jsonschema.validate(product, schemas["get_product"])
        assert product["id"] == "sku-002"
        assert product["stock"] == 5

        # Execution ids are per execution.
        again = await client.call_tool("search_products", {"query": "mouse"})
        assert ok(again) == found
        assert carmy_meta(again)["carmy/execution_id"] != carmy_meta(result)["carmy/execution_id"]


async def test_agent_error_is_a_tool_error(connect):
    async with connect() as client:
        result = await client.call_tool("get_product", {"id": "sku-999"})
        error = agent_error(result, "PRODUCT_NOT_FOUND", status="failed")
        assert error["category"] == "not_found"
        assert error["retryable"] is False
        assert error["next_tool"] == "search_products"
        assert error["details"] == {"id": "sku-999"}


async def test_invalid_arguments_name_the_bad_field(connect):
    async with connect() as client:
        result = await client.call_tool("search_products", {"query": "x", "limit": 0})
        error = agent_error(result, "INVALID_ARGUMENTS", status="rejected")
        assert error["category"] == "validation"
        paths = [problem["path"] for problem in error["details"]["errors"]]
        assert paths == ["/limit"], error

        # A wrong type deep inside an array is pointed at too.
        bad_line = order_args()
        bad_line["lines"][0]["quantity"] = "two"
        result = await client.call_tool("place_order", bad_line)
        error = agent_error(result, "INVALID_ARGUMENTS", status="rejected")
        assert "/lines/0/quantity" in [problem["path"] for problem in error["details"]["errors"]], error
        # Nothing ran.
        assert ok(await client.call_tool("list_orders", {}))["orders"] == []


async def test_unknown_tool_is_a_protocol_error(connect):
    async with connect() as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("no_such_tool", {})
        assert raised.value.code == -32602
        data = raised.value.data
        assert isinstance(data, dict), f"error data: {data!r}"
        assert data["error"]["code"] == "TOOL_NOT_FOUND", data
        # The session goes on.
        ok(await client.call_tool("list_orders", {}))


async def test_request_id_replays_instead_of_ordering_twice(connect):
    async with connect() as client:
        key = request_id()
        first = await client.call_tool("place_order", order_args(), meta={"carmy/request_id": key})
        order = ok(first)
        assert order["status"] == "placed"
        retry = await client.call_tool("place_order", order_args(), meta={"carmy/request_id": key})
        replayed = ok(retry, status="replayed")
        assert replayed["order_id"] == order["order_id"]
        assert replayed == order
        assert carmy_meta(retry)["carmy/execution_id"] == carmy_meta(first)["carmy/execution_id"]

        orders = ok(await client.call_tool("list_orders", {}))["orders"]
        assert [o["order_id"] for o in orders] == [order["order_id"]]
        # The stock moved once: 5 units, 2 ordered.
        assert ok(await client.call_tool("get_product", {"id": "sku-001"}))["stock"] == 3

        # The same key for other arguments is refused, and orders nothing.
        conflict = await client.call_tool(
            "place_order", order_args(quantity=1), meta={"carmy/request_id": key}
        )
        error = agent_error(conflict, "IDEMPOTENCY_CONFLICT", status="rejected")
        assert error["category"] == "conflict"
        orders = ok(await client.call_tool("list_orders", {}))["orders"]
        assert len(orders) == 1

        # Without a key, the same call is a second order: the key is what deduplicates.
        ok(await client.call_tool("place_order", order_args()))
        assert len(ok(await client.call_tool("list_orders", {}))["orders"]) == 2


async def test_destructive_tool_needs_the_host_grant(connect):
    async with connect() as client:
        order = ok(await client.call_tool("place_order", order_args()))
        refused = await client.call_tool("cancel_order", {"order_id": order["order_id"]})
        error = agent_error(refused, "CONFIRMATION_REQUIRED", status="rejected")
        assert error["category"] == "permission"
        # It did not run: the order stands.
        still = ok(await client.call_tool("get_order", {"order_id": order["order_id"]}))
        assert still["status"] == "placed"
        assert ok(await client.call_tool("get_product", {"id": "sku-001"}))["stock"] == 3


async def test_destructive_tool_runs_with_the_host_grant(connect):
    async with connect(grants=("confirm:cancel_order",)) as client:
        order = ok(await client.call_tool("place_order", order_args()))
        cancelled = ok(await client.call_tool("cancel_order", {"order_id": order["order_id"]}))
        assert cancelled == {
            "order_id": order["order_id"],
            "status": "cancelled",
            "refunded_cents": order["total_cents"],
        }
        after = ok(await client.call_tool("get_order", {"order_id": order["order_id"]}))
        assert after["status"] == "cancelled"
        assert ok(await client.call_tool("get_product", {"id": "sku-001"}))["stock"] == 5


async def test_external_write_tool(connect):
    async with connect() as client:
        order = ok(await client.call_tool("place_order", order_args()))
        receipt = ok(
            await client.call_tool("send_receipt", {"order_id": order["order_id"], "email": "ada@example.com"})
        )
        assert receipt["order_id"] == order["order_id"]
        assert receipt["sent_to"] == "ada@example.com"
        assert receipt["message_id"]


async def test_progress_is_reported(connect):
    async with connect() as client:
        updates: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            updates.append((progress, total, message))

        started = time.monotonic()
        result = await client.call_tool("sales_report", {"seconds": 1}, progress_callback=on_progress)
        elapsed = time.monotonic() - started
        report = ok(result)
        assert report == {"orders": 0, "revenue_cents": 0, "cancelled": 0}
        assert 0.9 <= elapsed < 10, elapsed
        assert len(updates) >= 2, f"progress notifications received: {updates}"
        values = [progress for progress, _, _ in updates]
        assert values == sorted(values) and len(set(values)) == len(values), values
        assert all(total == 10 for _, total, _ in updates), updates
        assert values[-1] <= 10


async def test_cancelled_call_stops_and_session_stays_usable(connect):
    progress_seen = anyio.Event()
    late: list[float] = []
    watching = {"token": None}

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        progress_seen.set()

    async def on_message(message: Any) -> None:
        # Every notification is teed here, progress included, even after the call was abandoned.
        if isinstance(message, ProgressNotification) and watching["token"] is not None:
            late.append(time.monotonic())

    async with connect(message_handler=on_message) as client:
        started = time.monotonic()
        outcome: dict[str, Any] = {}
        async with anyio.create_task_group() as group:

            async def slow_report() -> None:
                outcome["result"] = await client.call_tool(
                    "sales_report", {"seconds": 30}, progress_callback=on_progress
                )

            group.start_soon(slow_report)
            with anyio.move_on_after(5):
                await progress_seen.wait()
            assert progress_seen.is_set(), "sales_report reported no progress within 5 s"
            # Cancelling the caller's task makes the client send notifications/cancelled.
            group.cancel_scope.cancel()
        assert "result" not in outcome
        cancelled_at = time.monotonic()

        # The session is still usable, at once.
        ok(await client.call_tool("search_products", {"query": "mouse"}))
        ok(await client.call_tool("sales_report", {"seconds": 1}))
        assert time.monotonic() - started < 10

        # And the server stopped the tool: no more progress for it once in-flight ones landed.
        watching["token"] = True
        late.clear()
        await anyio.sleep(0.6)
        assert late == [], f"{len(late)} progress notifications arrived after the cancellation"
        assert time.monotonic() - cancelled_at < 10
