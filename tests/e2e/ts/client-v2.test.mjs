// The shop against the TypeScript v2 client (`@modelcontextprotocol/client`) in each of its
// negotiation modes: `legacy` (the default, 2025-11-25 `initialize`), `auto` (probes
// `server/discover`) and pinned to 2026-07-28.

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { collectStderr, serverParams, tap } from './lib/session.mjs';
import { shopSuite } from './lib/suite.mjs';

function opener(mode) {
  return async function open({ grants = [], args = [] } = {}) {
    const transport = new StdioClientTransport(serverParams(grants, args));
    const wire = tap(transport);
    const stderr = collectStderr(transport);
    const client = new Client(
      { name: 'carmy-e2e', version: '0.1.0' },
      { capabilities: {}, versionNegotiation: { mode } },
    );
    await client.connect(transport);
    return {
      client,
      wire,
      stderr,
      protocolVersion: () => client.getNegotiatedProtocolVersion(),
      list: () => client.listTools(),
      call: (name, args, { meta, ...options } = {}) =>
        client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) }, options),
      close: () => client.close(),
    };
  };
}

const CLIENT = 'TS client v2 (@modelcontextprotocol/client 2.3.1)';
shopSuite(`${CLIENT}, legacy`, { protocolVersion: '2025-11-25', exposesTtl: true, open: opener('legacy') });
shopSuite(`${CLIENT}, auto`, { protocolVersion: '2026-07-28', exposesTtl: true, open: opener('auto') });
shopSuite(`${CLIENT}, pinned 2026-07-28`, { protocolVersion: '2026-07-28', exposesTtl: true, open: opener({ pin: '2026-07-28' }) });
