"""The shop's prompt (`prompts/list`, `prompts/get`) and completion (`completion/complete`) of
the ids it and the resource templates take, driven by the Python MCP client in both of its
lifecycles against a fresh `shop mcp` per test.
"""

from __future__ import annotations

import json

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import (
    EmbeddedResource,
    PromptReference,
    ResourceTemplateReference,
    TextContent,
    TextResourceContents,
)

from test_shop import ADDRESS, ok

pytestmark = pytest.mark.anyio


async def place(client, product_id: str) -> dict:
    return ok(await client.call_tool("place_order", {
        "lines": [{"product_id": product_id, "quantity": 1}], "ship_to": ADDRESS,
    }))


async def test_the_prompt_is_listed_with_its_arguments(connect):
    async with connect() as client:
        [prompt] = (await client.list_prompts()).prompts
        assert (prompt.name, prompt.title) == ("order_help", "Help with an order")
        assert prompt.description.startswith("Help a customer with one of their orders")
        assert [(a.name, a.required) for a in prompt.arguments] == [
            ("order_id", True), ("issue", False),
        ]


async def test_the_prompt_embeds_the_order_and_the_issue(connect):
    async with connect() as client:
        order = await place(client, "sku-002")
        rendered = await client.get_prompt(
            "order_help", {"order_id": order["order_id"], "issue": "Wrong colour."}
        )
        assert rendered.description == f"Help with order {order['order_id']}"
        embedded, question = rendered.messages
        assert (embedded.role, question.role) == ("user", "user")
        assert isinstance(embedded.content, EmbeddedResource)
        resource = embedded.content.resource
        assert isinstance(resource, TextResourceContents)
        assert str(resource.uri) == f"shop://orders/{order['order_id']}"
        assert json.loads(resource.text) == order
        assert isinstance(question.content, TextContent)
        assert "Wrong colour." in question.content.text


async def test_a_missing_argument_or_unknown_prompt_is_invalid_params(connect):
    async with connect() as client:
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("order_help", {})
        assert missing.value.error.code == -32602
        assert "order_id" in missing.value.error.message
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("no_such_prompt", {})
        assert unknown.value.error.code == -32602
        # The session goes on.
        assert (await client.list_prompts()).prompts


async def test_ids_are_completed_from_what_the_shop_holds(connect):
    async with connect() as client:
        prompt = PromptReference(type="ref/prompt", name="order_help")
        empty = await client.complete(prompt, {"name": "order_id", "value": "ord-"})
        assert empty.completion.values == []
        first, second = await place(client, "sku-001"), await place(client, "sku-002")
        ids = [first["order_id"], second["order_id"]]
        orders = await client.complete(prompt, {"name": "order_id", "value": "ord-"})
        assert orders.completion.values == ids
        assert orders.completion.has_more in (None, False)
        template = ResourceTemplateReference(type="ref/resource", uri="shop://orders/{order_id}")
        same = await client.complete(template, {"name": "order_id", "value": "ord-"})
        assert same.completion.values == ids
        products = ResourceTemplateReference(type="ref/resource", uri="shop://products/{id}")
        skus = await client.complete(products, {"name": "id", "value": "sku-00"})
        assert skus.completion.values[:3] == ["sku-001", "sku-002", "sku-003"]
        assert all(value.startswith("sku-00") for value in skus.completion.values)
