// What the shop server promises over MCP, as assertions shared by every TypeScript client.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';

/** Each tool's declared effect and idempotency, as the shop's sources declare them. */
export const TOOLS = {
  search_products: ['read', true],
  get_product: ['read', true],
  place_order: ['write', false],
  get_order: ['read', true],
  list_orders: ['read', true],
  send_receipt: ['external_write', false],
  cancel_order: ['destructive', true],
  sales_report: ['read', true],
  quote_delivery: ['none', false],
};

export const ADDRESS = {
  name: 'Ada Lovelace',
  street: "12 St James's Square",
  city: 'London',
  postal_code: 'SW1Y 4JH',
  country: 'GB',
};

export function orderArgs({ productId = 'sku-001', quantity = 2 } = {}) {
  return { lines: [{ product_id: productId, quantity }], ship_to: ADDRESS };
}

export function requestId() {
  return `e2e-${randomUUID()}`;
}

/** The JSON in the result's single text block. */
export function textJson(result) {
  const texts = (result.content ?? []).filter((block) => block.type === 'text');
  assert.equal(texts.length, 1, `expected one text block, got ${JSON.stringify(result.content)}`);
  return JSON.parse(texts[0].text);
}

/** `_meta` of a tool result, after checking the execution id and status are there. */
export function carmyMeta(result) {
  const meta = result._meta ?? {};
  assert.equal(typeof meta['carmy/execution_id'], 'string', `no carmy/execution_id in ${JSON.stringify(meta)}`);
  assert.ok(meta['carmy/execution_id'].length > 0);
  assert.equal(typeof meta['carmy/status'], 'string', `no carmy/status in ${JSON.stringify(meta)}`);
  return meta;
}

/** The structured content of a successful result, after checking its envelope. */
export function ok(result, status = 'succeeded') {
  assert.ok(!result.isError, `tool failed: ${JSON.stringify(result.content)}`);
  const structured = result.structuredContent;
  assert.ok(structured && typeof structured === 'object' && !Array.isArray(structured), 'success without structuredContent');
  assert.deepEqual(textJson(result), structured, 'text block differs from structuredContent');
  const meta = carmyMeta(result);
  assert.equal(meta['carmy/status'], status);
  assert.ok(!('carmy/error' in meta));
  return structured;
}

/** The error object of an AgentError result, after checking its envelope. */
export function agentError(result, code, status) {
  assert.equal(result.isError, true, `expected ${code}, got a success: ${JSON.stringify(result.structuredContent)}`);
  assert.equal(result.structuredContent, undefined, 'an error result must not carry structuredContent');
  const envelope = textJson(result);
  assert.deepEqual(Object.keys(envelope), ['error']);
  const error = envelope.error;
  assert.equal(error.code, code, JSON.stringify(error));
  assert.equal(typeof error.message, 'string');
  assert.ok(error.message.length > 0);
  assert.equal(typeof error.category, 'string');
  assert.equal(typeof error.retryable, 'boolean');
  const meta = carmyMeta(result);
  assert.deepEqual(meta['carmy/error'], error, '_meta carmy/error differs from the text envelope');
  assert.equal(meta['carmy/status'], status);
  return error;
}

/** Everything in `schema` some clients reject: `$ref`, `$defs`, type unions with null. */
export function schemaProblems(schema, path = '#') {
  const problems = [];
  if (Array.isArray(schema)) {
    schema.forEach((item, index) => problems.push(...schemaProblems(item, `${path}/${index}`)));
  } else if (schema && typeof schema === 'object') {
    for (const [key, value] of Object.entries(schema)) {
      if (key === '$ref' || key === '$defs' || key === 'definitions') problems.push(`${path}/${key}`);
      if (key === 'type' && Array.isArray(value)) problems.push(`${path}/type is a list ${JSON.stringify(value)}`);
      problems.push(...schemaProblems(value, `${path}/${key}`));
    }
  }
  return problems;
}

/** Checks one listed tool against its declared effect. */
export function checkTool(tool) {
  const [effect, idempotent] = TOOLS[tool.name];
  const hints = tool.annotations;
  assert.ok(hints, `${tool.name}: no annotations`);
  // All four hints explicit, false included: absent destructive/openWorld hints mean true.
  for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint']) {
    assert.equal(typeof hints[hint], 'boolean', `${tool.name}: ${hint} not stated: ${JSON.stringify(hints)}`);
  }
  assert.equal(hints.readOnlyHint, effect === 'none' || effect === 'read', tool.name);
  assert.equal(hints.destructiveHint, effect === 'destructive', tool.name);
  assert.equal(hints.openWorldHint, effect === 'external_write', tool.name);
  assert.equal(hints.idempotentHint, idempotent, tool.name);
  const meta = tool._meta ?? {};
  assert.equal(meta['carmy/effect'], effect, `${tool.name}: ${JSON.stringify(meta)}`);
  assert.equal(meta['carmy/confirmation'], effect === 'destructive' ? 'required' : 'none', tool.name);
  assert.equal(typeof meta['carmy/parallel_safe'], 'boolean', tool.name);
  assert.equal(tool.inputSchema?.type, 'object', tool.name);
  assert.ok(tool.outputSchema, `${tool.name}: no outputSchema`);
  assert.equal(tool.outputSchema.type, 'object', tool.name);
  for (const [kind, schema] of [['inputSchema', tool.inputSchema], ['outputSchema', tool.outputSchema]]) {
    assert.deepEqual(schemaProblems(schema), [], `${tool.name} ${kind} is not portable`);
  }
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
