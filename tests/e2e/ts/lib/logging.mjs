// Protocol logging: the shop's tools log with `tracing`, and a client that asks for a level
// receives those events as `notifications/message`; one that did not ask receives nothing.
//
// How a client asks depends on the lifecycle. On 2025-11-25 the level belongs to the session
// (`logging/setLevel`). On 2026-07-28 there is no session state: each request carries the level
// in `_meta["io.modelcontextprotocol/logLevel"]`. The v2 client builds that `_meta` envelope
// itself but has no option to put a log level in it (its codec has a `logLevel` slot the Client
// never fills), so the tests pass the key as the request's own `_meta`, which the client merges
// over its envelope.

import assert from 'node:assert/strict';

import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { ADDRESS, ok, sleep } from './expect.mjs';

const LOG_LEVEL = 'io.modelcontextprotocol/logLevel';
const ORDER = { lines: [{ product_id: 'sku-002', quantity: 1 }], ship_to: ADDRESS };

/**
 * The `params` of every `notifications/message` the client hands to its handler, as they come.
 * v1 keys notification handlers by a zod schema, v2 by the method name.
 */
function received(client) {
  const messages = [];
  const keep = (notification) => messages.push(notification.params);
  if (client instanceof V1Client) client.setNotificationHandler(LoggingMessageNotificationSchema, keep);
  else client.setNotificationHandler('notifications/message', keep);
  return messages;
}

/** Log messages on the wire, handled or not: what the server sent, whatever the client does. */
function onWire(session) {
  return session.wire.filter((e) => e.dir === 'in' && e.message.method === 'notifications/message');
}

/**
 * @param {(title: string, body: (session: object) => Promise<void>, options?: object) => void} test
 *   `shopSuite`'s test, which opens a fresh session per test
 * @param {string} protocolVersion the version the session negotiates
 */
export function loggingTests(test, protocolVersion) {
  const perSession = protocolVersion === '2025-11-25';

  /** A tool caller at `level`: asks once on a session, and on every request otherwise. */
  async function caller(session, level) {
    if (perSession) await session.client.setLoggingLevel(level);
    return (name, args) => session.call(name, args, perSession ? {} : { meta: { [LOG_LEVEL]: level } });
  }

  test('a tool logs to the client that asks, before its answer', async (session) => {
    const messages = received(session.client);
    const call = await caller(session, 'info');
    await session.list();
    const order = ok(await call('place_order', ORDER));
    // Already here when the call returns: the server sends a call's events before its answer.
    assert.deepEqual(messages, [{
      level: 'info',
      logger: 'shop::orders',
      data: { message: 'order placed', order_id: order.order_id, total_cents: order.total_cents },
    }]);
    const sent = session.wire.find((e) => e.dir === 'out' && e.message.method === 'tools/call' && e.message.params?.name === 'place_order');
    const answeredAt = session.wire.findIndex((e) => e.dir === 'in' && e.message.id === sent.message.id && !e.message.method);
    const loggedAt = session.wire.findIndex((e) => e.dir === 'in' && e.message.method === 'notifications/message');
    assert.ok(loggedAt >= 0 && loggedAt < answeredAt, `logged at ${loggedAt}, answered at ${answeredAt}`);
  });

  test('nothing is logged to a client that did not ask', async (session) => {
    const messages = received(session.client);
    await session.list();
    ok(await session.call('place_order', ORDER));
    ok(await session.call('sales_report', { seconds: 1 }));
    await sleep(200);
    assert.deepEqual(messages, []);
    assert.deepEqual(onWire(session), []);
  });

  test('events below the level asked for are not logged', async (session) => {
    const messages = received(session.client);
    const call = await caller(session, 'warning');
    await session.list();
    ok(await call('place_order', ORDER));
    await sleep(200);
    assert.deepEqual(messages, []);
    assert.deepEqual(onWire(session), []);
  });

  test('each call logs its own events', async (session) => {
    const messages = received(session.client);
    const call = await caller(session, 'info');
    await session.list();
    const order = ok(await call('place_order', ORDER));
    ok(await call('cancel_order', { order_id: order.order_id }));
    ok(await call('sales_report', { seconds: 1 }));
    assert.deepEqual(messages.map(({ level, logger, data }) => [level, logger, data.message]), [
      ['info', 'shop::orders', 'order placed'],
      ['info', 'shop::orders', 'order cancelled'],
      ['info', 'shop::reports', 'sales report computed'],
    ]);
    assert.equal(messages[1].data.order_id, order.order_id);
    assert.deepEqual(messages[2].data, { message: 'sales report computed', orders: 0, cancelled: 1 });
  }, { grants: ['confirm:cancel_order'] });

  test(perSession ? 'the level asked for holds for the session' : 'the level asked for holds for its request only', async (session) => {
    const messages = received(session.client);
    const call = await caller(session, 'info');
    await session.list();
    ok(await call('place_order', ORDER));
    assert.equal(messages.length, 1);
    // A call that does not ask: on 2025-11-25 the session still wants logs, on 2026-07-28 it
    // is a request like any other with no level, so nothing.
    ok(await session.call('place_order', ORDER));
    await sleep(200);
    assert.deepEqual(messages.map((message) => message.data.message), perSession ? ['order placed', 'order placed'] : ['order placed']);
  });
}
