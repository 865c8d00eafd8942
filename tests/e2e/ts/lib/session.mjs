// A fresh `shop mcp` process per session, with a tap on the wire so tests can check what the
// client actually sent and received (cancellation, progress tokens, negotiated version).

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');

export function shopBin() {
  const path = process.env.SHOP_BIN || resolve(REPO_ROOT, 'target/release/shop');
  if (!existsSync(path)) {
    throw new Error(`shop binary not found at ${path}: run tests/e2e/run.sh, or \`cargo build --release -p shop\`, or set SHOP_BIN`);
  }
  return path;
}

const dataHomes = [];
process.on('exit', () => dataHomes.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/**
 * A fresh data directory (`XDG_DATA_HOME`), removed when the test process exits: a shop started
 * with it keeps its default store (an SQLite file with its orders and stock) there, empty at
 * first, as on a fresh machine.
 */
export function freshDataHome() {
  const dir = mkdtempSync(join(tmpdir(), 'carmy-e2e-data-'));
  dataHomes.push(dir);
  return dir;
}

/** `shop mcp` with `grants` and `args`, on its own fresh data directory. */
export function serverParams(grants = [], args = []) {
  return {
    command: shopBin(),
    args: ['mcp', ...grants.flatMap((grant) => ['--grant', grant]), ...args],
    env: { XDG_DATA_HOME: freshDataHome() },
    stderr: 'pipe',
  };
}

/**
 * Records every JSON-RPC message the transport sends and receives, in order, without changing
 * the transport's class (the TS v2 client probes only its own `StdioClientTransport`).
 */
export function tap(transport) {
  const wire = [];
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    wire.push({ dir: 'out', at: performance.now(), message });
    return send(message, options);
  };
  let handler;
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get() {
      return handler && ((message, extra) => {
        wire.push({ dir: 'in', at: performance.now(), message });
        return handler(message, extra);
      });
    },
    set(value) {
      handler = value;
    },
  });
  return wire;
}

/** Keeps the server's stderr, to show it when a test fails. */
export function collectStderr(transport) {
  const chunks = [];
  transport.stderr?.on('data', (chunk) => chunks.push(chunk));
  return () => Buffer.concat(chunks).toString('utf8');
}

/**
 * Runs `body(session)` against a connected session from `open`, closes it, and puts the
 * server's stderr into the error of a failing test.
 */
export async function withSession(open, options, body) {
  const session = await open(options);
  try {
    await body(session);
  } catch (error) {
    const stderr = session.stderr().trim();
    if (stderr && error instanceof Error) error.message += `\n--- shop stderr ---\n${stderr}`;
    throw error;
  } finally {
    await session.close();
  }
}
