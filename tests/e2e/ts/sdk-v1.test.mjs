// The shop against the TypeScript SDK v1 client (`@modelcontextprotocol/sdk`), protocol 2025-11-25.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { collectStderr, serverParams, tap } from './lib/session.mjs';
import { shopSuite } from './lib/suite.mjs';

async function open({ grants = [], args = [] } = {}) {
  const transport = new StdioClientTransport(serverParams(grants, args));
  const wire = tap(transport);
  const stderr = collectStderr(transport);
  const client = new Client({ name: 'carmy-e2e', version: '0.1.0' }, { capabilities: {} });
  await client.connect(transport);
  return {
    client,
    wire,
    stderr,
    protocolVersion: () => wire.find((e) => e.dir === 'in' && e.message.result?.protocolVersion)?.message.result.protocolVersion,
    list: () => client.listTools(),
    call: (name, args, { meta, ...options } = {}) =>
      client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) }, undefined, options),
    close: () => client.close(),
  };
}

shopSuite('TS SDK v1 (@modelcontextprotocol/sdk 1.32.2)', { protocolVersion: '2025-11-25', exposesTtl: true, open });
