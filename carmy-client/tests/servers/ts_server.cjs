// A small MCP server written with the official TypeScript SDK (npm `@modelcontextprotocol/sdk`
// 1.x, which speaks 2025-11-25), for carmy's tests. CommonJS so that NODE_PATH finds the SDK in
// tests/e2e/ts/node_modules (ES module imports ignore NODE_PATH).
const { McpServer, ResourceTemplate } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { z } = require("zod");

const server = new McpServer(
  { name: "ts-sdk-server", version: "1.0.0" },
  { capabilities: { logging: {} } },
);

server.registerTool(
  "add",
  { description: "Add two numbers.", inputSchema: { a: z.number(), b: z.number() } },
  async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
);

server.registerTool(
  "fail",
  { description: "Always fails.", inputSchema: { reason: z.string() } },
  async ({ reason }) => ({ isError: true, content: [{ type: "text", text: reason }] }),
);

server.registerTool(
  "slow",
  { description: "Count, reporting progress, then log.", inputSchema: { steps: z.number() } },
  async ({ steps }, extra) => {
    const token = extra._meta?.progressToken;
    for (let step = 1; step <= steps; step++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      if (token !== undefined) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken: token, progress: step, total: steps, message: "counting" },
        });
      }
    }
    await server.sendLoggingMessage({ level: "info", logger: "ts", data: "slow is done" });
    return { content: [{ type: "text", text: `counted to ${steps}` }] };
  },
);

server.registerResource(
  "greeting",
  "memo://greeting",
  { description: "A fixed greeting.", mimeType: "text/plain" },
  async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: "hello from typescript" }] }),
);

server.registerResource(
  "note",
  new ResourceTemplate("memo://notes/{name}", {
    list: undefined,
    complete: { name: (value) => ["alpha", "beta", "alpine"].filter((n) => n.startsWith(value)) },
  }),
  { description: "A note by name." },
  async (uri, { name }) => ({ contents: [{ uri: uri.href, text: `note ${name}` }] }),
);

server.registerPrompt(
  "review",
  { description: "Ask for a review of some code.", argsSchema: { code: z.string() } },
  ({ code }) => ({
    messages: [{ role: "user", content: { type: "text", text: `Please review:\n${code}` } }],
  }),
);

server.connect(new StdioServerTransport());
