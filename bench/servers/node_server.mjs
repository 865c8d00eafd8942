// Contender `ts-sdk`: the official TypeScript SDK (npm `@modelcontextprotocol/sdk` 1.32.2),
// `McpServer` + `StdioServerTransport`; the tool is in node_shop.mjs.

import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { makeServer } from "./node_shop.mjs";

await makeServer().connect(new StdioServerTransport());
