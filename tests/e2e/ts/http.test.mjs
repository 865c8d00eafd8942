// The shop over streamable HTTP (`shop http`, bearer tokens) with the TypeScript SDK v1 client,
// against a session server and a stateless one.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { freshDataHome, shopBin } from './lib/session.mjs';

const ALICE = `ts-alice-token-${randomUUID()}`;
const BOB = `ts-bob-token-${randomUUID()}`;

const ORDER = {
  lines: [{ product_id: 'sku-001', quantity: 1 }],
  ship_to: { name: 'Ada Lovelace', street: '12 St James\'s Square', city: 'London', postal_code: 'SW1Y 4JH', country: 'GB' },
};

/** Starts `shop http` on a free port; resolves once it prints its URL. */
function startShop(tokenFile, extra) {
  const child = spawn(shopBin(), ['http', '--addr', '127.0.0.1:0', '--token-file', tokenFile, ...extra], {
    env: { ...process.env, XDG_DATA_HOME: freshDataHome() },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const url = new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      // The whole line: a chunk may end inside the address.
      const match = /listening on (http:\/\/\S+)\n/.exec(stderr);
      if (match) resolve(new URL(match[1]));
    });
    child.on('exit', (code) => reject(new Error(`shop http exited ${code}: ${stderr}`)));
  });
  return { child, url, stderr: () => stderr };
}

async function connect(url, token) {
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'carmy-e2e-http', version: '0.1.0' }, { capabilities: {} });
  await client.connect(transport);
  return client;
}

for (const mode of ['sessions', 'stateless']) {
  describe(`TS SDK v1 over streamable HTTP (${mode})`, () => {
    let dir, shop, url;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'carmy-e2e-'));
      const tokens = join(dir, 'tokens');
      writeFileSync(tokens, `${ALICE} alice confirm:cancel_order\n${BOB} bob\n`, { mode: 0o600 });
      shop = startShop(tokens, mode === 'stateless' ? ['--stateless'] : []);
      url = await shop.url;
    });

    after(async () => {
      const exited = new Promise((resolve) => shop.child.once('exit', resolve));
      shop.child.kill('SIGTERM');
      assert.equal(await exited, 0, shop.stderr());
      rmSync(dir, { recursive: true, force: true });
    });

    test('calls run as the token principal, with its grants', async () => {
      const alice = await connect(url, ALICE);
      const { tools } = await alice.listTools();
      assert.equal(tools.length, 9);
      const order = await alice.callTool({ name: 'place_order', arguments: ORDER });
      assert.equal(order.isError, false);
      assert.equal(order.structuredContent.placed_by, 'alice');
      const cancelled = await alice.callTool({ name: 'cancel_order', arguments: { order_id: order.structuredContent.order_id } });
      assert.equal(cancelled.isError, false);
      await alice.close();

      const bob = await connect(url, BOB);
      const refused = await bob.callTool({ name: 'cancel_order', arguments: { order_id: order.structuredContent.order_id } });
      assert.equal(refused.isError, true);
      await bob.close();
    });

    test('idempotency keys are scoped by principal', async () => {
      const _meta = { 'carmy/request_id': `ts-${randomUUID()}` };
      const alice = await connect(url, ALICE);
      const first = await alice.callTool({ name: 'place_order', arguments: ORDER, _meta });
      const replay = await alice.callTool({ name: 'place_order', arguments: ORDER, _meta });
      assert.equal(replay._meta['carmy/status'], 'replayed');
      assert.equal(replay.structuredContent.order_id, first.structuredContent.order_id);
      await alice.close();
      const bob = await connect(url, BOB);
      const own = await bob.callTool({ name: 'place_order', arguments: ORDER, _meta });
      assert.notEqual(own.structuredContent.order_id, first.structuredContent.order_id);
      await bob.close();
    });

    test('no token, a wrong token: 401 before MCP', async () => {
      await assert.rejects(connect(url, 'wrong-token-0123456789'), /401|nauthorized/);
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      assert.equal(response.status, 401);
      assert.match(response.headers.get('www-authenticate'), /^Bearer/);
    });
  });
}
