// The shop as an OAuth 2.1 resource server (`security.oauth` in a configuration file) with the
// TypeScript SDK v1 client doing OAuth itself: a 401 sends it to the shop's protected resource
// metadata, that to the test's authorization server (on loopback, signing with a key made here),
// where it gets a token by client credentials; a call its scopes do not cover gets a 403
// `insufficient_scope`, and the client steps up to the scope the shop names and retries.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';

import { freshDataHome, shopBin } from './lib/session.mjs';

const CLIENT_ID = 'e2e-agent';
const CLIENT_SECRET = 'e2e-agent-secret-0123456789';
/** The scopes the test's client may be granted. */
const GRANTABLE = ['shop:read', 'shop:orders'];

const ORDER = {
  lines: [{ product_id: 'sku-001', quantity: 1 }],
  ship_to: { name: 'Ada Lovelace', street: '12 St James\'s Square', city: 'London', postal_code: 'SW1Y 4JH', country: 'GB' },
};

/** Listens on a free loopback port; resolves to the server's base URL. */
function listen(server) {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`));
  });
}

/** A port free a moment ago, for the shop: its resource URL must be known before it starts. */
async function freePort() {
  const probe = createServer();
  const url = await listen(probe);
  await new Promise((resolve) => probe.close(resolve));
  return new URL(url).port;
}

/**
 * The authorization server: RFC 8414 metadata, a JWKS, and a token endpoint for the client
 * credentials grant (client_secret_basic), issuing RS256 JWTs for the `resource` asked for.
 */
async function startIssuer() {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'e2e-key', alg: 'RS256', use: 'sig' };
  const tokenRequests = [];
  let url;
  const server = createServer(async (request, response) => {
    const json = (status, body) => {
      response.writeHead(status, { 'Content-Type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    const path = new URL(request.url, url).pathname;
    if (request.method === 'GET' && path === '/.well-known/oauth-authorization-server') {
      return json(200, {
        issuer: url,
        // Required by the metadata's format; this test's client never goes there.
        authorization_endpoint: `${url}/authorize`,
        token_endpoint: `${url}/token`,
        jwks_uri: `${url}/jwks`,
        grant_types_supported: ['client_credentials'],
        token_endpoint_auth_methods_supported: ['client_secret_basic'],
        response_types_supported: ['code'],
        scopes_supported: GRANTABLE,
      });
    }
    if (request.method === 'GET' && path === '/jwks') return json(200, { keys: [jwk] });
    if (request.method === 'POST' && path === '/token') {
      let body = '';
      for await (const chunk of request) body += chunk;
      const form = new URLSearchParams(body);
      const [id, secret] = Buffer.from((request.headers.authorization ?? '').replace(/^Basic /, ''), 'base64')
        .toString()
        .split(':')
        .map(decodeURIComponent);
      if (id !== CLIENT_ID || secret !== CLIENT_SECRET) return json(401, { error: 'invalid_client' });
      if (form.get('grant_type') !== 'client_credentials') return json(400, { error: 'unsupported_grant_type' });
      const resource = form.get('resource');
      if (!resource) return json(400, { error: 'invalid_target', error_description: 'no resource' });
      const scope = (form.get('scope') ?? '').split(' ').filter((s) => GRANTABLE.includes(s)).join(' ');
      tokenRequests.push({ scope: form.get('scope'), resource });
      const token = await new SignJWT({ scope })
        .setProtectedHeader({ alg: 'RS256', kid: jwk.kid, typ: 'at+jwt' })
        .setIssuer(url)
        .setSubject(CLIENT_ID)
        .setAudience(resource)
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(privateKey);
      return json(200, { access_token: token, token_type: 'Bearer', expires_in: 3600, scope });
    }
    json(404, { error: 'not_found' });
  });
  url = await listen(server);
  return { url, server, tokenRequests };
}

/**
 * Client credentials that ask for the scopes the server's last challenge named. The SDK's
 * transport reads the `scope` of a 401 or a 403 `insufficient_scope` and re-runs its OAuth
 * flow, but for the client credentials grant it sends the provider's configured scope
 * (`fetchToken` in the SDK's client/auth.js), so the provider follows the challenges itself,
 * through the transport's `fetch`.
 */
class ChallengeFollowingCredentials extends ClientCredentialsProvider {
  challenged;

  prepareTokenRequest(scope) {
    return super.prepareTokenRequest(this.challenged ?? scope);
  }

  /** `fetch`, noting the scope each challenge asks for. */
  fetch = async (input, init) => {
    const response = await fetch(input, init);
    const scope = /scope="([^"]*)"/.exec(response.headers.get('www-authenticate') ?? '');
    if (scope) this.challenged = scope[1];
    return response;
  };
}

/** `shop serve` with `config`; resolves once it prints its URL. */
function startShop(configFile) {
  const child = spawn(shopBin(), ['serve', '--config', configFile, '--store', 'memory'], {
    env: { ...process.env, XDG_DATA_HOME: freshDataHome() },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const url = new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const match = /listening on (http:\/\/\S+)\n/.exec(stderr);
      if (match) resolve(new URL(match[1]));
    });
    child.on('exit', (code) => reject(new Error(`shop serve exited ${code}: ${stderr}`)));
  });
  return { child, url, stderr: () => stderr };
}

describe('TS SDK v1 with OAuth against the shop as a resource server', () => {
  let dir, issuer, shop, url;

  before(async () => {
    issuer = await startIssuer();
    const port = await freePort();
    dir = mkdtempSync(join(tmpdir(), 'carmy-e2e-oauth-'));
    const config = join(dir, 'shop.toml');
    writeFileSync(config, [
      '[server]',
      'transport = "http"',
      `port = ${port}`,
      '',
      '[security.oauth]',
      `issuer = "${issuer.url}"`,
      `resource = "http://127.0.0.1:${port}/mcp"`,
      'required_scopes = ["shop:read"]',
      'scopes = [',
      '  "shop:read allow:effect:read",',
      '  "shop:orders allow:place_order allow:cancel_order confirm:cancel_order",',
      ']',
      '',
    ].join('\n'));
    shop = startShop(config);
    url = await shop.url;
  });

  after(async () => {
    const exited = new Promise((resolve) => shop.child.once('exit', resolve));
    shop.child.kill('SIGTERM');
    assert.equal(await exited, 0, shop.stderr());
    issuer.server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the client discovers the issuer, gets a token, and steps up for a write', async () => {
    const authProvider = new ChallengeFollowingCredentials({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      expectedIssuer: issuer.url,
    });
    const transport = new StreamableHTTPClientTransport(url, { authProvider, fetch: authProvider.fetch });
    const client = new Client({ name: 'carmy-e2e-oauth', version: '0.1.0' }, { capabilities: {} });
    await client.connect(transport);

    // The first token: the scope the shop's 401 asked for, for the shop as its audience.
    assert.deepEqual(issuer.tokenRequests, [{ scope: 'shop:read', resource: url.href }]);
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name).sort();
    assert.ok(names.length > 0 && !names.includes('place_order'), names.join(' '));
    const found = await client.callTool({ name: 'search_products', arguments: { query: 'keyboard' } });
    assert.equal(found.isError, false, JSON.stringify(found));

    // A write needs shop:orders: 403 insufficient_scope, a new token, the call retried.
    const order = await client.callTool({ name: 'place_order', arguments: ORDER });
    assert.equal(order.isError, false, JSON.stringify(order));
    assert.equal(order.structuredContent.placed_by, CLIENT_ID);
    assert.deepEqual(issuer.tokenRequests.at(-1), { scope: 'shop:read shop:orders', resource: url.href });
    assert.equal(issuer.tokenRequests.length, 2);
    // The scope also gave its grant: the cancellation runs without asking.
    const cancelled = await client.callTool({
      name: 'cancel_order',
      arguments: { order_id: order.structuredContent.order_id },
    });
    assert.equal(cancelled.isError, false, JSON.stringify(cancelled));
    await client.close();
  });

  test('a request without a token is pointed to the metadata, which names the issuer', async () => {
    const refused = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(refused.status, 401);
    const metadataUrl = `${url.origin}/.well-known/oauth-protected-resource/mcp`;
    assert.equal(
      refused.headers.get('www-authenticate'),
      `Bearer resource_metadata="${metadataUrl}", scope="shop:read"`,
    );
    const metadata = await (await fetch(metadataUrl)).json();
    assert.equal(metadata.resource, url.href);
    assert.deepEqual(metadata.authorization_servers, [issuer.url]);
    assert.deepEqual(metadata.scopes_supported, ['shop:read', 'shop:orders']);
  });
});
