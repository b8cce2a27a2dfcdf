import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHub, type TestHub } from '../testing/test-hub.js';

/** HTTP's answer to a known path asked with the wrong method, on the real hub. */
describe('wrong HTTP method', () => {
  let hub: TestHub;
  const call = async (method: string, path: string) => {
    const res = await fetch(`${hub.url}${path}`, { method });
    const text = await res.text();
    return {
      status: res.status,
      allow: res.headers.get('allow'),
      body: text ? (JSON.parse(text) as { code: string; message: string }) : undefined,
    };
  };

  beforeAll(async () => {
    hub = await startTestHub();
  }, 60_000);
  afterAll(async () => {
    await hub?.close();
  });

  it('answers 405 with Allow when the path exists under other methods', async () => {
    expect(await call('PUT', '/api/v1/targets')).toEqual({
      status: 405,
      allow: 'GET, HEAD',
      body: {
        code: 'method-not-allowed',
        message: 'PUT is not allowed on /api/v1/targets: use GET, HEAD',
        requestId: expect.stringMatching(/^\S+$/) as string,
      },
    });
    // A path with parameters: /api/v1/appsets/:name has GET and DELETE.
    const put = await call('PUT', '/api/v1/appsets/web');
    expect([put.status, put.allow, put.body?.code]).toEqual([405, 'DELETE, GET, HEAD', 'method-not-allowed']);
    const agent = await call('DELETE', '/api/agent/v1/assignments');
    expect([agent.status, agent.allow]).toEqual([405, 'GET, HEAD']);
  });

  it('keeps 404 for paths no route has, and for things a route does not find', async () => {
    const none = await call('GET', '/api/v1/no-such-thing');
    expect([none.status, none.allow, none.body?.code]).toEqual([404, null, 'not-found']);
    const missing = await call('GET', '/api/v1/appsets/no-such-appset');
    expect([missing.status, missing.allow, missing.body?.code]).toEqual([404, null, 'not-found']);
  });
});
