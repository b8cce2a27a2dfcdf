import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHub, type TestHub } from '../testing/test-hub.js';

/** One id names a request in the caller's error, the answer's header and the hub's request log. */
describe('request ids', () => {
  let hub: TestHub;
  const logLines: Record<string, unknown>[] = [];

  beforeAll(async () => {
    const logStream = new PassThrough();
    logStream.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line.trim()) logLines.push(JSON.parse(line) as Record<string, unknown>);
    });
    hub = await startTestHub({ LOG_LEVEL: 'info' }, { logStream });
  }, 60_000);
  afterAll(async () => {
    await hub?.close();
  });

  const get = async (path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${hub.url}${path}`, { headers });
    return { header: res.headers.get('x-request-id'), body: (await res.json()) as Record<string, unknown> };
  };
  const loggedIds = () =>
    logLines.flatMap((l) =>
      typeof l['req'] === 'object' && l['req'] ? [(l['req'] as { id: unknown }).id] : [],
    );

  it("keeps a caller's or proxy's id and names it in the error, the header and the log", async () => {
    const r = await get('/api/v1/appsets/no-such-appset', { 'X-Request-Id': 'proxy-7f3a.42' });
    expect(r.header).toBe('proxy-7f3a.42');
    expect(r.body).toEqual({
      code: 'not-found',
      message: expect.stringContaining('no-such-appset') as string,
      requestId: 'proxy-7f3a.42',
    });
    await expect.poll(loggedIds).toContain('proxy-7f3a.42');
  });

  it('gives every other request a fresh id, also when the given one is unsafe to log', async () => {
    const a = await get('/api/v1/no-such-thing');
    const b = await get('/api/v1/no-such-thing', { 'X-Request-Id': 'two words\tand a tab' });
    for (const r of [a, b]) {
      expect(r.header).toMatch(/^[0-9a-f-]{36}$/);
      expect(r.body['requestId']).toBe(r.header);
    }
    expect(a.header).not.toBe(b.header);
    const ok = await fetch(`${hub.url}/healthz`);
    expect(ok.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});
