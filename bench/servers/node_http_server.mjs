// Contender `ts-sdk-http`: the official TypeScript SDK (npm `@modelcontextprotocol/sdk` 1.32.2)
// serving the tool of node_shop.mjs over streamable HTTP on `node:http`, as the SDK's
// documentation does it:
//
//   node bench/servers/node_http_server.mjs [--port 0] [--stateless]
//
// `--stateless`: a server and a transport per request (`sessionIdGenerator: undefined`), answers
// as JSON. Without it: `initialize` opens a session (a transport kept by its `Mcp-Session-Id`),
// answers on an event stream. Prints `listening on http://127.0.0.1:PORT/mcp` once it accepts.

import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { makeServer } from "./node_shop.mjs";

const args = process.argv.slice(2);
const stateless = args.includes("--stateless");
const portAt = args.indexOf("--port");
const port = portAt >= 0 ? Number(args[portAt + 1]) : 0;

/** The request's JSON body, or undefined when it is not JSON. */
async function body(request) {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return undefined;
  }
}

function refuse(response, status, message) {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message } }));
}

const sessions = new Map();

async function serve(request, response) {
  if (new URL(request.url, "http://localhost").pathname !== "/mcp") {
    return refuse(response, 404, "not found");
  }
  if (stateless) {
    if (request.method !== "POST") return refuse(response, 405, "method not allowed");
    const parsed = await body(request);
    const server = makeServer();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    response.on("close", () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    return transport.handleRequest(request, response, parsed);
  }
  const id = request.headers["mcp-session-id"];
  if (request.method === "POST") {
    const parsed = await body(request);
    let transport = id === undefined ? undefined : sessions.get(id);
    if (transport === undefined) {
      if (id !== undefined || !isInitializeRequest(parsed)) {
        return refuse(response, 400, "no valid session");
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (opened) => sessions.set(opened, transport),
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await makeServer().connect(transport);
    }
    return transport.handleRequest(request, response, parsed);
  }
  const transport = id === undefined ? undefined : sessions.get(id);
  if (transport === undefined) return refuse(response, 400, "no valid session");
  return transport.handleRequest(request, response);
}

const http = createServer((request, response) => {
  serve(request, response).catch((error) => {
    if (!response.headersSent) refuse(response, 500, String(error));
  });
});
http.keepAliveTimeout = 60_000;
http.listen(port, "127.0.0.1", () => {
  process.stdout.write(`listening on http://127.0.0.1:${http.address().port}/mcp\n`);
});
