import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HubStandIn } from '../testing/hub-stand-in.js';
import { HubClient, HubError } from './hub-client.js';

describe('HubClient against a stand-in hub', () => {
  const hub = new HubStandIn();
  let client: HubClient;
  beforeAll(async () => {
    await hub.start();
    client = new HubClient(hub.url, 'test');
  });
  afterAll(async () => {
    await hub.stop();
  });

  async function failure(p: Promise<unknown>): Promise<HubError> {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(HubError);
    return err as HubError;
  }

  it('registers, then long-polls: 200 with the set, 304 once nothing changed', async () => {
    const reg = await client.register('east', hub.bootstrapToken);
    expect(reg.clusterName).toBe('east');
    const first = await client.assignments(reg.credential, undefined, 0);
    expect(first.changed).toBe(true);
    const etag = first.changed ? first.response.etag : '';
    expect(await client.assignments(reg.credential, etag, 0)).toEqual({ changed: false });
    hub.setAssignments([]);
    const next = await client.assignments(reg.credential, etag, 5);
    expect(next.changed && next.response.etag).not.toBe(etag);
  });

  it('says which kind of failure it met, and where', async () => {
    const refused = await failure(client.register('east', 'wrong-token'));
    expect([refused.code, refused.status, refused.path, refused.transient]).toEqual([
      'HUB_UNAUTHORIZED',
      401,
      '/api/agent/v1/register',
      false,
    ]);
    expect(refused.message).toContain('BOOTSTRAP_TOKEN_INVALID: unknown or used bootstrap token');

    const { credential } = await client.register('east', hub.bootstrapToken);
    const missing = await failure(client.bundle(credential, `sha256:${'a'.repeat(64)}`));
    expect([missing.code, missing.status]).toEqual(['HUB_REJECTED', 404]);

    const away = new HubClient('http://127.0.0.1:1', 'test');
    const unreachable = await failure(away.assignments('x', undefined, 0));
    expect([unreachable.code, unreachable.transient]).toEqual(['HUB_UNREACHABLE', true]);
    expect(unreachable.message).toContain('cannot reach the hub at http://127.0.0.1:1');
  });
});
