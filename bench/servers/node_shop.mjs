// The TypeScript SDK contenders' shop (npm `@modelcontextprotocol/sdk` 1.32.2, zod schemas):
// `search_products` over examples/shop/data/catalog.json with the semantics of
// bench/src/catalog.rs: case-insensitive substring of the name or a tag, optional category,
// catalog order, `limit` default 10 (1..50), `total` counts every match. Served on stdio by
// node_server.mjs and on streamable HTTP by node_http_server.mjs.

import { readFileSync } from "node:fs";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";

const CATEGORIES = ["peripherals", "displays", "audio", "storage", "networking", "accessories"];
const catalog = JSON.parse(readFileSync(new URL("../../examples/shop/data/catalog.json", import.meta.url), "utf8"));
const index = catalog.map((p) => ({
  product: p,
  name: p.name.toLowerCase(),
  tags: p.tags.map((t) => t.toLowerCase()),
}));

const product = z.object({
  id: z.string(),
  name: z.string(),
  price_cents: z.number().int().min(0),
  category: z.enum(CATEGORIES),
  tags: z.array(z.string()),
  in_stock: z.boolean(),
});

/** A server with the one tool, as the SDK's documentation builds one. */
export function makeServer() {
  const server = new McpServer({ name: "ts-sdk", version: "0.1.0" });
  server.registerTool(
    "search_products",
    {
      description: "Search the product catalog by name or tag.",
      inputSchema: {
        query: z.string().describe("Text to look for in product names and tags (case-insensitive)."),
        limit: z.number().int().min(1).max(50).optional().describe("Maximum number of products to return."),
        category: z.enum(CATEGORIES).optional().describe("Only return products of this category."),
      },
      outputSchema: { products: z.array(product), total: z.number().int().min(0) },
    },
    async ({ query, limit = 10, category }) => {
      const q = query.toLowerCase();
      const matches = index
        .filter(
          (e) =>
            (category === undefined || e.product.category === category) &&
            (e.name.includes(q) || e.tags.some((t) => t.includes(q))),
        )
        .map((e) => e.product);
      const output = { products: matches.slice(0, limit), total: matches.length };
      return { content: [{ type: "text", text: JSON.stringify(output) }], structuredContent: output };
    },
  );
  return server;
}
