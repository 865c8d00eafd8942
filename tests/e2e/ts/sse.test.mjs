// The shop over the legacy HTTP+SSE transport (`shop http --legacy-sse`: MCP 2024-11-05's
// `GET /sse` stream and the `POST /messages` endpoint it announces) with the TypeScript SDK v1's
// `SSEClientTransport` and bearer tokens.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';

import { freshDataHome, shopBin } from './lib/session.mjs';

const ALICE = `ts-sse-alice-${randomUUID()}`;
const BOB = `ts-sse-bob-${randomUUID()}`;

const ORDER = {
  lines: [{ product_id: 'sku-001', quantity: 1 }],
  ship_to: { name: 'Ada Lovelace', street: '12 St James\'s Square', city: 'London', postal_code: 'SW1Y 4JH', country: 'GB' },
};

/** Starts `shop http --legacy-sse` on a free port; resolves to its `/sse` URL once it prints it. */
function startShop(tokenFile) {
  const child = spawn(shopBin(), ['http', '--addr', '127.0.0.1:0', '--token-file', tokenFile, '--legacy-sse'], {
    env: { ...process.env, XDG_DATA_HOME: freshDataHome() },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const url = new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      // The whole line: a chunk may end inside the address.
      const match = /legacy HTTP\+SSE on (http:\/\/\S+)\n/.exec(stderr);
      if (match) resolve(new URL(match[1]));
    });
    child.on('exit', (code) => reject(new Error(`shop http exited ${code}: ${stderr}`)));
  });
  return { child, url, stderr: () => stderr };
}

/** Every request of the transport (the stream's GET and each message's POST) carries `token`. */
function bearer(token) {
  return (url, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set('Authorization', `Bearer ${token}`);
    return fetch(url, { ...init, headers });
  };
}

async function connect(url, token) {
  const transport = new SSEClientTransport(url, { fetch: bearer(token) });
  const client = new Client({ name: 'carmy-e2e-sse', version: '0.1.0' }, { capabilities: {} });
  await client.connect(transport);
  return client;
}

describe('TS SDK v1 over the legacy HTTP+SSE transport', () => {
  let dir, shop, url;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'carmy-e2e-sse-'));
    const tokens = join(dir, 'tokens');
    writeFileSync(tokens, `${ALICE} alice confirm:cancel_order\n${BOB} bob\n`, { mode: 0o600 });
    shop = startShop(tokens);
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
    assert.equal(alice.getServerVersion().name, 'shop');
    const { tools } = await alice.listTools();
    assert.equal(tools.length, 9);
    const order = await alice.callTool({ name: 'place_order', arguments: ORDER });
    assert.equal(order.isError, false);
    assert.equal(order.structuredContent.placed_by, 'alice');
    const cancelled = await alice.callTool({ name: 'cancel_order', arguments: { order_id: order.structuredContent.order_id } });
    assert.equal(cancelled.isError, false);
    assert.equal(cancelled.structuredContent.status, 'cancelled');
    await alice.close();

    const bob = await connect(url, BOB);
    const mine = await bob.callTool({ name: 'place_order', arguments: ORDER });
    assert.equal(mine.structuredContent.placed_by, 'bob');
    const refused = await bob.callTool({ name: 'cancel_order', arguments: { order_id: mine.structuredContent.order_id } });
    assert.equal(refused.isError, true);
    assert.equal(refused._meta['carmy/error'].code, 'CONFIRMATION_REQUIRED');
    await bob.close();
  });

  test('a resent request id replays in another SSE session', async () => {
    const _meta = { 'carmy/request_id': `ts-sse-${randomUUID()}` };
    const first = await connect(url, ALICE);
    const placed = await first.callTool({ name: 'place_order', arguments: ORDER, _meta });
    assert.equal(placed._meta['carmy/status'], 'succeeded');
    await first.close();
    const second = await connect(url, ALICE);
    const replay = await second.callTool({ name: 'place_order', arguments: ORDER, _meta });
    assert.equal(replay._meta['carmy/status'], 'replayed');
    assert.equal(replay.structuredContent.order_id, placed.structuredContent.order_id);
    await second.close();
  });

  test('progress notifications arrive on the stream', async () => {
    const client = await connect(url, ALICE);
    const progress = [];
    const result = await client.callTool({ name: 'sales_report', arguments: { seconds: 1 } }, undefined, {
      onprogress: ({ progress: value }) => progress.push(value),
    });
    assert.equal(result.isError, false);
    assert.ok(progress.length >= 2, `progress notifications received: ${progress}`);
    assert.deepEqual(progress, [...progress].sort((a, b) => a - b));
    await client.close();
  });

  test('no token, a wrong token: 401, and no stream', async () => {
    await assert.rejects(connect(url, 'wrong-token-0123456789'), /401|nauthorized/);
    const response = await fetch(url, { headers: { Accept: 'text/event-stream' } });
    assert.equal(response.status, 401);
    assert.match(response.headers.get('www-authenticate'), /^Bearer/);
    // The server goes on serving whoever has a token.
    const bob = await connect(url, BOB);
    assert.equal((await bob.listTools()).tools.length, 9);
    await bob.close();
  });
});
