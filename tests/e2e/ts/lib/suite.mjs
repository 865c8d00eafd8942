// The e2e suite every TypeScript client runs: one fresh server per test.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { TOOLS, agentError, carmyMeta, checkTool, ok, orderArgs, requestId, sleep } from './expect.mjs';
import { loggingTests } from './logging.mjs';
import { promptTests } from './prompts.mjs';
import { resourceTests } from './resources.mjs';
import { withSession } from './session.mjs';

const TEST_TIMEOUT_MS = 30_000;

/**
 * @param {string} name the suite's name (client and mode)
 * @param {object} spec
 * @param {string} spec.protocolVersion the version the session must negotiate
 * @param {boolean} spec.exposesTtl whether this client hands `ttlMs` of `tools/list` to callers
 * @param {(options: {grants?: string[]}) => Promise<object>} spec.open a connected session
 */
export function shopSuite(name, { protocolVersion, exposesTtl, open }) {
  const test = (title, body, options = {}) =>
    it(title, { timeout: TEST_TIMEOUT_MS }, () => withSession(open, options, body));

  describe(name, () => {
    test('negotiates the expected protocol version', async (session) => {
      assert.equal(session.protocolVersion(), protocolVersion);
    });

    test('tools/list states every effect', async (session) => {
      const listing = await session.list();
      const names = listing.tools.map((tool) => tool.name).sort();
      assert.deepEqual(names, Object.keys(TOOLS).sort());
      assert.equal(listing.nextCursor, undefined);
      if (exposesTtl) assert.equal(listing.ttlMs, 60_000, 'tools/list ttlMs');
      for (const tool of listing.tools) checkTool(tool);
    });

    test('a read tool returns structuredContent the client validates', async (session) => {
      // Listing first gives the client the output schemas it validates results against.
      await session.list();
      const result = await session.call('search_products', { query: 'mouse' });
      const found = ok(result);
      assert.deepEqual(found.products.map((product) => product.id), ['sku-001', 'sku-002', 'sku-003', 'sku-004']);
      assert.equal(found.total, 4);
      for (const product of found.products) {
        assert.match(`${product.name} ${product.tags.join(' ')}`.toLowerCase(), /mouse/);
      }
      const product = ok(await session.call('get_product', { id: 'sku-002' }));
      assert.equal(product.id, 'sku-002');
      assert.equal(product.stock, 5);
      const again = await session.call('search_products', { query: 'mouse' });
      assert.deepEqual(ok(again), found);
      assert.notEqual(carmyMeta(again)['carmy/execution_id'], carmyMeta(result)['carmy/execution_id']);
    });

    test('an AgentError is a tool error with the error envelope', async (session) => {
      await session.list();
      const error = agentError(await session.call('get_product', { id: 'sku-999' }), 'PRODUCT_NOT_FOUND', 'failed');
      assert.equal(error.category, 'not_found');
      assert.equal(error.retryable, false);
      assert.equal(error.next_tool, 'search_products');
      assert.deepEqual(error.details, { id: 'sku-999' });
    });

    test('invalid arguments name the bad field', async (session) => {
      await session.list();
      let error = agentError(await session.call('search_products', { query: 'x', limit: 0 }), 'INVALID_ARGUMENTS', 'rejected');
      assert.equal(error.category, 'validation');
      assert.deepEqual(error.details.errors.map((problem) => problem.path), ['/limit']);
      const badLine = orderArgs();
      badLine.lines[0].quantity = 'two';
      error = agentError(await session.call('place_order', badLine), 'INVALID_ARGUMENTS', 'rejected');
      assert.ok(error.details.errors.some((problem) => problem.path === '/lines/0/quantity'), JSON.stringify(error));
      assert.deepEqual(ok(await session.call('list_orders', {})).orders, []);
    });

    test('an unknown tool is JSON-RPC error -32602 with TOOL_NOT_FOUND', async (session) => {
      await session.list();
      await assert.rejects(session.call('no_such_tool', {}), (error) => {
        assert.equal(error.code, -32602, `${error}`);
        assert.equal(error.data?.error?.code, 'TOOL_NOT_FOUND', JSON.stringify(error.data));
        return true;
      });
      ok(await session.call('list_orders', {}));
    });

    test('a request id replays the call instead of ordering twice', async (session) => {
      await session.list();
      const key = requestId();
      const first = await session.call('place_order', orderArgs(), { meta: { 'carmy/request_id': key } });
      const order = ok(first);
      assert.equal(order.status, 'placed');
      const retry = await session.call('place_order', orderArgs(), { meta: { 'carmy/request_id': key } });
      assert.deepEqual(ok(retry, 'replayed'), order);
      assert.equal(carmyMeta(retry)['carmy/execution_id'], carmyMeta(first)['carmy/execution_id']);
      let orders = ok(await session.call('list_orders', {})).orders;
      assert.deepEqual(orders.map((o) => o.order_id), [order.order_id]);
      assert.equal(ok(await session.call('get_product', { id: 'sku-001' })).stock, 3);

      const conflict = await session.call('place_order', orderArgs({ quantity: 1 }), { meta: { 'carmy/request_id': key } });
      assert.equal(agentError(conflict, 'IDEMPOTENCY_CONFLICT', 'rejected').category, 'conflict');
      orders = ok(await session.call('list_orders', {})).orders;
      assert.equal(orders.length, 1);

      ok(await session.call('place_order', orderArgs()));
      assert.equal(ok(await session.call('list_orders', {})).orders.length, 2);
    });

    test('the destructive tool is refused without the host grant, and does not run', async (session) => {
      await session.list();
      const order = ok(await session.call('place_order', orderArgs()));
      const refused = await session.call('cancel_order', { order_id: order.order_id });
      assert.equal(agentError(refused, 'CONFIRMATION_REQUIRED', 'rejected').category, 'permission');
      assert.equal(ok(await session.call('get_order', { order_id: order.order_id })).status, 'placed');
      assert.equal(ok(await session.call('get_product', { id: 'sku-001' })).stock, 3);
    });

    test('the destructive tool runs with the host grant', async (session) => {
      await session.list();
      const order = ok(await session.call('place_order', orderArgs()));
      const cancelled = ok(await session.call('cancel_order', { order_id: order.order_id }));
      assert.deepEqual(cancelled, { order_id: order.order_id, status: 'cancelled', refunded_cents: order.total_cents });
      assert.equal(ok(await session.call('get_order', { order_id: order.order_id })).status, 'cancelled');
      assert.equal(ok(await session.call('get_product', { id: 'sku-001' })).stock, 5);
    }, { grants: ['confirm:cancel_order'] });

    test('progress notifications reach the caller', async (session) => {
      await session.list();
      const updates = [];
      const started = performance.now();
      const report = ok(await session.call('sales_report', { seconds: 1 }, { onprogress: (update) => updates.push(update) }));
      const elapsed = performance.now() - started;
      assert.deepEqual(report, { orders: 0, revenue_cents: 0, cancelled: 0 });
      assert.ok(elapsed >= 900 && elapsed < 10_000, `took ${elapsed} ms`);
      assert.ok(updates.length >= 2, `progress notifications received: ${JSON.stringify(updates)}`);
      const values = updates.map((update) => update.progress);
      for (let i = 1; i < values.length; i++) assert.ok(values[i] > values[i - 1], `not increasing: ${values}`);
      for (const update of updates) assert.equal(update.total, 10);
      assert.ok(values.at(-1) <= 10);

      // On the wire: the client asked for progress, and none came after the response.
      const call = session.wire.find((e) => e.dir === 'out' && e.message.method === 'tools/call' && e.message.params?.name === 'sales_report');
      const token = call.message.params._meta?.progressToken;
      assert.notEqual(token, undefined, 'the client sent no progress token');
      await sleep(200);
      const answeredAt = session.wire.findIndex((e) => e.dir === 'in' && e.message.id === call.message.id && !e.message.method);
      const trailing = session.wire.slice(answeredAt).filter((e) => e.message.method === 'notifications/progress' && e.message.params?.progressToken === token);
      assert.equal(trailing.length, 0, 'progress notifications after the response');
    });

    test('cancelling the slow tool stops it and the session stays usable', async (session) => {
      await session.list();
      const started = performance.now();
      const controller = new AbortController();
      let progressed;
      const firstProgress = new Promise((resolve) => (progressed = resolve));
      const slow = session.call('sales_report', { seconds: 30 }, {
        signal: controller.signal,
        onprogress: () => progressed(true),
        timeout: 60_000,
      });
      slow.catch(() => {});
      assert.equal(await Promise.race([firstProgress, sleep(5_000).then(() => false)]), true, 'no progress within 5 s');
      controller.abort(new Error('the test cancels the report'));
      await assert.rejects(slow);
      const cancelledAt = performance.now();

      const call = session.wire.find((e) => e.dir === 'out' && e.message.method === 'tools/call' && e.message.params?.name === 'sales_report');
      const cancel = session.wire.find((e) => e.dir === 'out' && e.message.method === 'notifications/cancelled');
      assert.ok(cancel, 'the client sent no notifications/cancelled');
      assert.equal(cancel.message.params.requestId, call.message.id);
      const token = call.message.params._meta.progressToken;

      // The session is still usable, at once.
      ok(await session.call('search_products', { query: 'mouse' }));
      ok(await session.call('sales_report', { seconds: 1 }));
      assert.ok(performance.now() - started < 10_000);

      // The server stopped the tool: no more progress for it, and no late response.
      const quietFrom = performance.now();
      await sleep(600);
      const late = session.wire.filter((e) => e.dir === 'in' && e.at >= quietFrom && e.message.method === 'notifications/progress' && e.message.params?.progressToken === token);
      assert.equal(late.length, 0, `${late.length} progress notifications after the cancellation`);
      const answered = session.wire.filter((e) => e.dir === 'in' && e.message.id === call.message.id && !e.message.method);
      assert.deepEqual(answered.map((e) => e.message), [], 'the cancelled request was answered');
      assert.ok(performance.now() - cancelledAt < 10_000);
    });

    resourceTests(test, protocolVersion);
    promptTests(test);
    loggingTests(test, protocolVersion);
  });
}
