"""Contender `python-mcp`: the official Python SDK (PyPI `mcp` 2.3.0), `MCPServer` over stdio.

Serves `search_products` over examples/shop/data/catalog.json with the semantics of
bench/src/catalog.rs: case-insensitive substring of the name or a tag, optional category,
catalog order, `limit` default 10 (1..50), `total` counts every match.
"""

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from mcp.server.mcpserver import MCPServer

Category = Literal["peripherals", "displays", "audio", "storage", "networking", "accessories"]


class Product(BaseModel):
    id: str
    name: str
    price_cents: int
    category: Category
    tags: list[str]
    in_stock: bool


class SearchOutput(BaseModel):
    products: list[Product]
    total: int


CATALOG = [
    Product(**p) for p in json.loads((Path(__file__).resolve().parents[2] / "examples" / "shop" / "data" / "catalog.json").read_text())
]
INDEX = [(p, p.name.lower(), [t.lower() for t in p.tags]) for p in CATALOG]

server = MCPServer("python-mcp", version="0.1.0")


@server.tool(description="Search the product catalog by name or tag.")
def search_products(
    query: Annotated[str, Field(description="Text to look for in product names and tags (case-insensitive).")],
    limit: Annotated[int, Field(ge=1, le=50, description="Maximum number of products to return.")] = 10,
    category: Annotated[Category | None, Field(description="Only return products of this category.")] = None,
) -> SearchOutput:
    q = query.lower()
    matches = [
        p
        for p, name, tags in INDEX
        if (category is None or p.category == category) and (q in name or any(q in t for t in tags))
    ]
    return SearchOutput(products=matches[:limit], total=len(matches))


if __name__ == "__main__":
    server.run("stdio")
