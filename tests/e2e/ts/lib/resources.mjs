// The shop's resources, as every TypeScript client sees them: `resources/list`,
// `resources/templates/list` and `resources/read`, on the session `shopSuite` opens.

import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { ADDRESS, ok, sleep } from './expect.mjs';

/** How long an edit may take to be told (the server debounces for 200 ms). */
const NOTICE_MS = 10_000;

/** MCP's "resource not found": its own code up to 2025-11-25, invalid params from 2026-07-28. */
const NOT_FOUND = { '2025-11-25': -32002, '2026-07-28': -32602 };

/** The JSON of a read's one text content, after checking its URI and MIME type. */
function onlyJson(result, uri) {
  assert.equal(result.contents.length, 1, JSON.stringify(result.contents));
  const [content] = result.contents;
  assert.equal(content.uri, uri);
  assert.equal(content.mimeType, 'application/json');
  assert.equal(typeof content.text, 'string');
  return JSON.parse(content.text);
}

/**
 * @param {(title: string, body: (session: object) => Promise<void>, options?: object) => void} test
 *   `shopSuite`'s test, which opens a fresh session per test
 * @param {string} protocolVersion the version the session negotiates
 */
export function resourceTests(test, protocolVersion) {
  const read = (session, uri) => session.client.readResource({ uri });

  test('resources/list and resources/templates/list name the shop\'s pages', async (session) => {
    const { resources, nextCursor } = await session.client.listResources();
    const [catalog, ...policies] = resources;
    assert.deepEqual(
      { uri: catalog.uri, name: catalog.name, title: catalog.title, mimeType: catalog.mimeType },
      { uri: 'shop://catalog', name: 'catalog', title: 'Catalog', mimeType: 'application/json' },
    );
    assert.match(catalog.description, /^Every product the shop sells/);
    // The policy documents, served from the shop's `policies/` directory.
    assert.deepEqual(
      policies.map(({ name, mimeType }) => ({ name, mimeType })),
      ['privacy.md', 'returns.md', 'shipping.md'].map((name) => ({ name, mimeType: 'text/markdown' })),
    );
    for (const { uri, name } of policies) {
      assert.ok(uri.startsWith('file:///') && uri.endsWith(`/examples/shop/policies/${name}`), uri);
    }
    assert.equal(nextCursor, undefined);
    const { resourceTemplates } = await session.client.listResourceTemplates();
    assert.deepEqual(
      resourceTemplates.map(({ uriTemplate, name, mimeType }) => ({ uriTemplate, name, mimeType })).sort((a, b) => a.name.localeCompare(b.name)),
      [
        { uriTemplate: 'shop://orders/{order_id}', name: 'order', mimeType: 'application/json' },
        { uriTemplate: 'shop://products/{id}', name: 'product', mimeType: 'application/json' },
      ],
    );
  });

  test('a product page follows the stock, and an order is read through its template', async (session) => {
    const page = 'shop://products/sku-001';
    assert.equal(onlyJson(await read(session, page), page).stock, 5);
    await session.list();
    const order = ok(await session.call('place_order', { lines: [{ product_id: 'sku-001', quantity: 2 }], ship_to: ADDRESS }));
    assert.equal(onlyJson(await read(session, page), page).stock, 3);
    const uri = `shop://orders/${order.order_id}`;
    assert.deepEqual(onlyJson(await read(session, uri), uri), order);
    const catalog = onlyJson(await read(session, 'shop://catalog'), 'shop://catalog');
    assert.deepEqual(catalog.slice(0, 2).map((product) => product.id), ['sku-001', 'sku-002']);
  });

  test('what is not there is "resource not found", and the session goes on', async (session) => {
    for (const [uri, code] of [
      ['shop://products/sku-999', 'PRODUCT_NOT_FOUND'],
      ['shop://orders/ord-1', 'ORDER_NOT_FOUND'],
      ['shop://customers/1', 'RESOURCE_NOT_FOUND'],
    ]) {
      await assert.rejects(read(session, uri), (error) => {
        assert.equal(error.code, NOT_FOUND[protocolVersion], `${uri}: ${error}`);
        assert.equal(error.data?.error?.code, code, JSON.stringify(error.data));
        return true;
      });
    }
    onlyJson(await read(session, 'shop://catalog'), 'shop://catalog');
  });

  // A directory of the test's own, served with `--resource-root`: an edit made as soon as the
  // client follows the file is told to it (2025-11-25: `resources/subscribe`; 2026-07-28: a
  // `subscriptions/listen` stream, whose acknowledgment the v2 client awaits).
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'carmy-e2e-files-')));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  let files = 0;
  test('an edit of a file the client follows is told to it', async (session) => {
    const name = `faq-${files++}.md`;
    writeFileSync(join(dir, name), '# FAQ\n');
    const uri = `file://${dir}/${name}`;
    const told = [];
    const keep = (notification) => told.push(notification.params.uri);
    const { client } = session;
    if (client instanceof V1Client) client.setNotificationHandler(ResourceUpdatedNotificationSchema, keep);
    else client.setNotificationHandler('notifications/resources/updated', keep);
    const subscription = protocolVersion === '2026-07-28'
      ? await client.listen({ resourceSubscriptions: [uri] })
      : await client.subscribeResource({ uri });
    if (protocolVersion === '2026-07-28') {
      assert.deepEqual(subscription.honoredFilter.resourceSubscriptions, [uri]);
    }
    writeFileSync(join(dir, name), '# FAQ\n\nNew answers.\n');
    const deadline = Date.now() + NOTICE_MS;
    while (!told.includes(uri)) {
      assert.ok(Date.now() < deadline, `no notifications/resources/updated for ${uri}`);
      await sleep(50);
    }
    const { contents: [content] } = await read(session, uri);
    assert.equal(content.text, '# FAQ\n\nNew answers.\n');
    if (protocolVersion === '2026-07-28') await subscription.close();
  }, { args: ['--resource-root', dir] });
}
