"""The shop's resources (`resources/list`, `resources/templates/list`, `resources/read`), driven by
the Python MCP client in both of its lifecycles against a fresh `shop mcp` per test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import TextResourceContents

from conftest import EXPECTED_VERSION
from test_shop import ADDRESS, ok

pytestmark = pytest.mark.anyio

#: MCP's "resource not found": its own code up to 2025-11-25, invalid params from 2026-07-28.
NOT_FOUND = {"2025-11-25": -32002, "2026-07-28": -32602}


def only_json(result: Any, uri: str) -> Any:
    """The JSON of a read's one text content, after checking its URI and MIME type."""
    assert len(result.contents) == 1, result.contents
    content = result.contents[0]
    assert isinstance(content, TextResourceContents), content
    assert str(content.uri) == uri
    assert content.mime_type == "application/json"
    return json.loads(content.text)


async def test_resources_and_templates_are_listed(connect):
    async with connect() as client:
        listing = await client.list_resources()
        catalog, *policies = listing.resources
        assert (str(catalog.uri), catalog.name, catalog.title, catalog.mime_type) == (
            "shop://catalog", "catalog", "Catalog", "application/json"
        )
        assert catalog.description.startswith("Every product the shop sells")
        # The policy documents, served from the shop's `policies/` directory.
        assert [(p.name, p.mime_type) for p in policies] == [
            (name, "text/markdown") for name in ("privacy.md", "returns.md", "shipping.md")
        ]
        for policy in policies:
            assert str(policy.uri).startswith("file:///")
            assert str(policy.uri).endswith(f"/examples/shop/policies/{policy.name}")
        assert listing.next_cursor is None
        templates = await client.list_resource_templates()
        assert sorted((t.uri_template, t.name, t.mime_type) for t in templates.resource_templates) == [
            ("shop://orders/{order_id}", "order", "application/json"),
            ("shop://products/{id}", "product", "application/json"),
        ]


async def test_the_catalog_is_read_as_json(connect):
    async with connect() as client:
        catalog = only_json(await client.read_resource("shop://catalog"), "shop://catalog")
        assert [product["id"] for product in catalog[:4]] == ["sku-001", "sku-002", "sku-003", "sku-004"]
        assert all({"id", "name", "price_cents", "category"} <= set(product) for product in catalog)


async def test_a_product_page_follows_the_stock(connect):
    uri = "shop://products/sku-001"
    async with connect() as client:
        before = only_json(await client.read_resource(uri), uri)
        assert (before["id"], before["stock"]) == ("sku-001", 5)
        ok(await client.call_tool("place_order", {
            "lines": [{"product_id": "sku-001", "quantity": 2}], "ship_to": ADDRESS,
        }))
        # Read again, through the client's cache: the server said the page is not to be kept.
        after = only_json(await client.read_resource(uri), uri)
        assert after["stock"] == 3


async def test_an_order_is_read_through_its_template(connect):
    async with connect(grants=("confirm:cancel_order",)) as client:
        order = ok(await client.call_tool("place_order", {
            "lines": [{"product_id": "sku-002", "quantity": 1}], "ship_to": ADDRESS,
        }))
        uri = f"shop://orders/{order['order_id']}"
        assert only_json(await client.read_resource(uri), uri) == order
        ok(await client.call_tool("cancel_order", {"order_id": order["order_id"]}))
        assert only_json(await client.read_resource(uri), uri)["status"] == "cancelled"


@pytest.mark.parametrize(
    ("uri", "code"),
    [
        ("shop://products/sku-999", "PRODUCT_NOT_FOUND"),
        ("shop://orders/ord-1", "ORDER_NOT_FOUND"),
        ("shop://customers/1", "RESOURCE_NOT_FOUND"),
    ],
)
async def test_what_is_not_there_is_resource_not_found(connect, mode, uri, code):
    async with connect() as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource(uri)
        assert raised.value.code == NOT_FOUND[EXPECTED_VERSION[mode]]
        assert raised.value.data["error"]["code"] == code, raised.value.data
        # The session goes on.
        assert only_json(await client.read_resource("shop://catalog"), "shop://catalog")
