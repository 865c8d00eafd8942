// The shop's prompt (`prompts/list`, `prompts/get`) and the completion of the ids it and the
// resource templates take (`completion/complete`), on the session `shopSuite` opens.

import assert from 'node:assert/strict';

import { ADDRESS, ok } from './expect.mjs';

const INVALID_PARAMS = -32602;

/** One unit of a product that has stock: sku-003 is sold out, so it can never be ordered. */
function place(session, productId) {
  return session.call('place_order', { lines: [{ product_id: productId, quantity: 1 }], ship_to: ADDRESS }).then(ok);
}

/** The suggestions for `argument` = `value` of `ref`, after checking nothing more is promised. */
async function suggestions(session, ref, argument, value) {
  const { completion } = await session.client.complete({ ref, argument: { name: argument, value } });
  assert.ok(!completion.hasMore, `hasMore: ${JSON.stringify(completion)}`);
  return completion.values;
}

/**
 * @param {(title: string, body: (session: object) => Promise<void>, options?: object) => void} test
 *   `shopSuite`'s test, which opens a fresh session per test
 */
export function promptTests(test) {
  test('prompts/list is order_help with its arguments in order', async (session) => {
    const { prompts, nextCursor } = await session.client.listPrompts();
    assert.deepEqual(prompts.map(({ name, title }) => ({ name, title })), [{ name: 'order_help', title: 'Help with an order' }]);
    assert.match(prompts[0].description, /^Help a customer with one of their orders/);
    assert.deepEqual(
      prompts[0].arguments.map(({ name, required }) => ({ name, required: required ?? false })),
      [{ name: 'order_id', required: true }, { name: 'issue', required: false }],
    );
    assert.equal(nextCursor, undefined);
  });

  test('prompts/get embeds the order a tool placed and the customer\'s issue', async (session) => {
    await session.list();
    const order = await place(session, 'sku-002');
    const rendered = await session.client.getPrompt({ name: 'order_help', arguments: { order_id: order.order_id, issue: 'Wrong colour.' } });
    assert.equal(rendered.description, `Help with order ${order.order_id}`);
    assert.equal(rendered.messages.length, 2, JSON.stringify(rendered.messages));
    const [embedded, question] = rendered.messages;
    assert.deepEqual([embedded.role, question.role], ['user', 'user']);
    assert.equal(embedded.content.type, 'resource', JSON.stringify(embedded.content));
    const { resource } = embedded.content;
    assert.equal(resource.uri, `shop://orders/${order.order_id}`);
    assert.equal(resource.mimeType, 'application/json');
    // The prompt reads the same store the tool wrote: the embedded JSON is the tool's output.
    assert.deepEqual(JSON.parse(resource.text), order);
    assert.equal(question.content.type, 'text', JSON.stringify(question.content));
    assert.ok(question.content.text.includes('Wrong colour.'), question.content.text);
  });

  test('a missing argument or an unknown prompt is -32602, and the session goes on', async (session) => {
    await assert.rejects(session.client.getPrompt({ name: 'order_help', arguments: {} }), (error) => {
      assert.equal(error.code, INVALID_PARAMS, `${error}`);
      assert.match(error.message, /order_id/);
      return true;
    });
    await assert.rejects(session.client.getPrompt({ name: 'no_such_prompt', arguments: {} }), (error) => {
      assert.equal(error.code, INVALID_PARAMS, `${error}`);
      return true;
    });
    assert.equal((await session.client.listPrompts()).prompts.length, 1);
  });

  test('completion suggests the ids the shop holds, for the prompt and the templates', async (session) => {
    const prompt = { type: 'ref/prompt', name: 'order_help' };
    const orderTemplate = { type: 'ref/resource', uri: 'shop://orders/{order_id}' };
    assert.deepEqual(await suggestions(session, prompt, 'order_id', 'ord-'), []);
    await session.list();
    const ids = [(await place(session, 'sku-001')).order_id, (await place(session, 'sku-002')).order_id];
    assert.deepEqual(await suggestions(session, prompt, 'order_id', 'ord-'), ids);
    assert.deepEqual(await suggestions(session, orderTemplate, 'order_id', 'ord-'), ids);
    const skus = await suggestions(session, { type: 'ref/resource', uri: 'shop://products/{id}' }, 'id', 'sku-00');
    assert.deepEqual(skus.slice(0, 3), ['sku-001', 'sku-002', 'sku-003']);
    for (const sku of skus) assert.ok(sku.startsWith('sku-00'), `${sku} does not complete sku-00`);
  });
}
