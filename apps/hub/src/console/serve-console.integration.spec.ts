import 'reflect-metadata';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHub, type TestHub } from '../testing/test-hub.js';
import { CONSOLE_CSP } from './serve-console.js';

// The console on a real hub (PostgreSQL, Redis): served at /, the API untouched beside it.

const INDEX = '<!doctype html><title>Flotilla</title><div id="root"></div>';

describe('the hub serves the web console', () => {
  let dir: string;
  let hub: TestHub;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'flotilla-console-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), INDEX);
    writeFileSync(join(dir, 'assets', 'index-abc123.js'), 'console.log("console")');
    hub = await startTestHub({ FLOTILLA_CONSOLE_DIR: dir });
  }, 120_000);
  afterAll(async () => {
    await hub?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers / and every console route with index.html under a strict CSP, never cached', async () => {
    for (const path of ['/', '/targets/web-eu1', '/history?target=x']) {
      const res = await fetch(`${hub.url}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(await res.text()).toBe(INDEX);
    }
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).not.toContain('unsafe-inline');
  });

  it('serves hashed assets as immutable, and a missing asset is a 404, not index.html', async () => {
    const asset = await fetch(`${hub.url}/assets/index-abc123.js`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect(await asset.text()).toBe('console.log("console")');
    const missing = await fetch(`${hub.url}/assets/nope.js`);
    expect(missing.status).toBe(404);
    expect(await missing.text()).not.toBe(INDEX);
  });

  it('leaves the API, probes and metrics as they were, and does not answer writes', async () => {
    const api = await fetch(`${hub.url}/api/v1/nope`);
    expect(api.status).toBe(404);
    expect(api.headers.get('content-type')).toMatch(/json/);
    expect((await fetch(`${hub.url}/api/v1/session`)).status).toBe(200);
    expect((await fetch(`${hub.url}/healthz`)).status).toBe(200);
    const metrics = await fetch(`${hub.url}/metrics`);
    expect(await metrics.text()).not.toBe(INDEX);
    expect((await fetch(`${hub.url}/`, { method: 'POST' })).status).toBe(404);
  });
});

describe('a hub whose console is not built', () => {
  it('says so in one line at / instead of a bare 404', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-console-empty-'));
    const hub = await startTestHub({ FLOTILLA_CONSOLE_DIR: dir });
    try {
      const res = await fetch(`${hub.url}/`);
      expect(res.status).toBe(503);
      expect(await res.text()).toMatch(/web console is not built .*npm run build/);
      expect((await fetch(`${hub.url}/healthz`)).status).toBe(200);
    } finally {
      await hub.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
