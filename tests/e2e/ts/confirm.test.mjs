// Confirmation through the client (`shop mcp --confirm-via-client`) with the TypeScript clients:
// the SDK v1 (2025-11-25, `elicitation/create` answered by a request handler) and the v2 client
// pinned to 2026-07-28 (`input_required` fulfilled by the same handler, or driven by hand to
// tamper with `requestState`).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { agentError, ok, orderArgs } from './lib/expect.mjs';
import { collectStderr, serverParams } from './lib/session.mjs';

const TIMEOUT = { timeout: 30_000 };

function params(grants) {
  const base = serverParams(grants);
  return { ...base, args: [...base.args, '--confirm-via-client'] };
}

/** A user who answers every confirmation the same way and remembers the questions. */
function human(action = 'accept', approve = true) {
  const asked = [];
  const answer = async (request) => {
    asked.push(request.params.message);
    assert.deepEqual(request.params.requestedSchema.required, ['approve']);
    return approve === undefined ? { action } : { action, content: { approve } };
  };
  return { asked, answer };
}

async function openV1(user, grants = []) {
  const transport = new StdioV1(params(grants));
  const stderr = collectStderr(transport);
  const client = new ClientV1({ name: 'carmy-e2e', version: '0.1.0' }, { capabilities: user ? { elicitation: {} } : {} });
  if (user) client.setRequestHandler(ElicitRequestSchema, user.answer);
  await client.connect(transport);
  return { client, stderr, call: (name, args) => client.callTool({ name, arguments: args }) };
}

async function openV2(user, grants = []) {
  const transport = new StdioV2(params(grants));
  const stderr = collectStderr(transport);
  const client = new ClientV2(
    { name: 'carmy-e2e', version: '0.1.0' },
    { capabilities: user ? { elicitation: { form: {} } } : {}, versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  if (user) client.setRequestHandler('elicitation/create', user.answer);
  await client.connect(transport);
  return { client, stderr, call: (name, args, options) => client.callTool({ name, arguments: args }, options) };
}

async function session(open, user, grants, body) {
  const s = await open(user, grants);
  try {
    await body(s);
  } catch (error) {
    if (error instanceof Error) error.message += `\n--- shop stderr ---\n${s.stderr()}`;
    throw error;
  } finally {
    await s.client.close();
  }
}

async function placeOrder(s) {
  return ok(await s.call('place_order', orderArgs()));
}

async function orderStatus(s, orderId) {
  return ok(await s.call('get_order', { order_id: orderId })).status;
}

for (const [name, open] of [
  ['TS SDK v1, 2025-11-25', openV1],
  ['TS client v2, pinned 2026-07-28', openV2],
]) {
  describe(`confirmation through the client: ${name}`, () => {
    it('an approved call runs once', TIMEOUT, async () => {
      const user = human();
      await session(open, user, [], async (s) => {
        const order = await placeOrder(s);
        const cancelled = ok(await s.call('cancel_order', { order_id: order.order_id }));
        assert.equal(cancelled.status, 'cancelled');
        assert.deepEqual(user.asked, [`Allow \`cancel_order\` (destructive) with {order_id: "${order.order_id}"}?`]);
        assert.equal(await orderStatus(s, order.order_id), 'cancelled');
        assert.equal(ok(await s.call('get_product', { id: 'sku-001' })).stock, 5);
      });
    });

    for (const [action, approve] of [['decline', undefined], ['cancel', undefined], ['accept', false]]) {
      it(`${action}${approve === false ? ' with approve: false' : ''} does not run the call`, TIMEOUT, async () => {
        const user = human(action, approve);
        await session(open, user, [], async (s) => {
          const order = await placeOrder(s);
          const error = agentError(await s.call('cancel_order', { order_id: order.order_id }), 'CONFIRMATION_DECLINED', 'rejected');
          assert.equal(error.category, 'permission');
          assert.equal(user.asked.length, 1);
          assert.equal(await orderStatus(s, order.order_id), 'placed');
        });
      });
    }

    it('the question names the declared target whatever keys are added', TIMEOUT, async () => {
      // Keys the tool does not declare, named to sort before `order_id`, each long enough to fill a
      // summary: the question still names the order, and says what it left out.
      const user = human('decline', undefined);
      await session(open, user, [], async (s) => {
        const order = await placeOrder(s);
        const args = { order_id: order.order_id };
        for (let n = 0; n < 40; n++) args[`a${String(n).padStart(2, '0')}`] = 'x'.repeat(100);
        agentError(await s.call('cancel_order', args), 'CONFIRMATION_DECLINED', 'rejected');
        assert.deepEqual(user.asked, [
          `Allow \`cancel_order\` (destructive) with {order_id: "${order.order_id}"}? Not shown: 40 keys the tool does not declare.`,
        ]);
        assert.equal(await orderStatus(s, order.order_id), 'placed');
      });
    });

    it('a client without elicitation gets CONFIRMATION_REQUIRED', TIMEOUT, async () => {
      await session(open, undefined, [], async (s) => {
        const order = await placeOrder(s);
        agentError(await s.call('cancel_order', { order_id: order.order_id }), 'CONFIRMATION_REQUIRED', 'rejected');
        assert.equal(await orderStatus(s, order.order_id), 'placed');
      });
    });

    it('a host grant takes precedence: nobody is asked', TIMEOUT, async () => {
      const user = human('decline', undefined);
      await session(open, user, ['confirm:cancel_order'], async (s) => {
        const order = await placeOrder(s);
        ok(await s.call('cancel_order', { order_id: order.order_id }));
        assert.deepEqual(user.asked, []);
      });
    });
  });
}

describe('confirmation through the client: TS client v2, 2026-07-28, requestState driven by hand', () => {
  const approve = { 'carmy/confirm': { action: 'accept', content: { approve: true } } };
  const firstRound = async (s, args) => {
    const first = await s.call('cancel_order', args, { allowInputRequired: true });
    assert.equal(first.resultType, 'input_required', JSON.stringify(first));
    assert.deepEqual(Object.keys(first.inputRequests), ['carmy/confirm']);
    assert.equal(typeof first.requestState, 'string');
    return first.requestState;
  };
  const retry = (s, args, requestState) =>
    s.client.callTool({ name: 'cancel_order', arguments: args, inputResponses: approve, requestState }, { allowInputRequired: true });
  const tamper = (state, index) => state.slice(0, index) + (state[index] === 'A' ? 'B' : 'A') + state.slice(index + 1);

  it('a tampered, replayed or re-targeted requestState is refused and nothing runs', TIMEOUT, async () => {
    await session(openV2, human(), [], async (s) => {
      const mine = await placeOrder(s);
      const other = await placeOrder(s);
      const args = { order_id: mine.order_id };
      const state = await firstRound(s, args);
      // A state that fails verification is the request's error (-32602), before anything runs.
      const refused = async (args, requestState) => {
        await assert.rejects(retry(s, args, requestState), (error) => {
          assert.equal(error.code, -32602);
          assert.match(error.message, /^`requestState` is not valid/);
          return true;
        });
      };
      for (const index of [0, Math.floor(state.length / 2), state.length - 1]) {
        await refused(args, tamper(state, index));
      }
      await refused({ order_id: other.order_id }, state);
      assert.equal(await orderStatus(s, mine.order_id), 'placed');
      assert.equal(await orderStatus(s, other.order_id), 'placed');
      // The genuine state runs the call, once; used again it is refused.
      ok(await retry(s, args, state));
      assert.equal(await orderStatus(s, mine.order_id), 'cancelled');
      agentError(await retry(s, args, state), 'CONFIRMATION_INVALID', 'rejected');
    });
  });
});
