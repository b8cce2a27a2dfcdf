import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_FEATURES, AGENT_REFUSAL, BUNDLE_BATCH_MAX } from '@flotilla/contract';
import { HubStandIn } from '../testing/hub-stand-in.js';
import { HubClient, HubCallError } from './hub-client.js';

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

  async function failure(p: Promise<unknown>): Promise<HubCallError> {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(HubCallError);
    return err as HubCallError;
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
    // Every call says what the agent can do, so the hub asks it nothing it cannot run.
    expect(hub.lastAnnouncement).toEqual({ features: AGENT_FEATURES.join(','), version: 'test' });
  });

  it('fetches many bundles in batches of at most BUNDLE_BATCH_MAX, listing what the hub refused', async () => {
    const { credential } = await client.register('east', hub.bootstrapToken);
    const digests = Array.from({ length: BUNDLE_BATCH_MAX + 5 }, (_, i) =>
      hub.addBundle([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}` } }]),
    );
    const unknown = `sha256:${'b'.repeat(64)}`;
    const before = hub.bundleBatches;
    const got = await client.bundles(credential, [...digests, unknown, digests[0] ?? '']);
    expect(hub.bundleBatches - before).toBe(2);
    expect(got.bundles.map((b) => b.digest).sort()).toEqual([...digests].sort());
    expect(got.bundles.find((b) => b.digest === digests[3])?.manifests[0]?.metadata.name).toBe('cm-3');
    expect(got.refused).toEqual([unknown]);
  });

  it('asks a hub without the batch endpoint one digest at a time', async () => {
    const { credential } = await client.register('east', hub.bootstrapToken);
    const a = hub.addBundle([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'old-a' } }]);
    const unknown = `sha256:${'c'.repeat(64)}`;
    hub.batchBundles = false;
    try {
      const before = hub.bundleBatches;
      const got = await client.bundles(credential, [a, unknown]);
      expect(hub.bundleBatches).toBe(before);
      expect(got.bundles.map((b) => b.digest)).toEqual([a]);
      expect(got.refused).toEqual([unknown]);
      expect(hub.bundleFetches.get(a)).toBe(1);
    } finally {
      hub.batchBundles = true;
    }
  });

  it('says which kind of failure it met, and where', async () => {
    const refused = await failure(client.register('east', 'wrong-token'));
    expect([refused.code, refused.status, refused.path, refused.transient]).toEqual([
      'hub-unauthorized',
      401,
      '/api/agent/v1/register',
      false,
    ]);
    expect(refused.message).toContain('bootstrap-token-invalid: unknown or used bootstrap token');

    const { credential } = await client.register('east', hub.bootstrapToken);
    const missing = await failure(client.bundle(credential, `sha256:${'a'.repeat(64)}`));
    expect([missing.code, missing.status]).toEqual(['hub-rejected', 404]);

    const away = new HubClient('http://127.0.0.1:1', 'test');
    const unreachable = await failure(away.assignments('x', undefined, 0));
    expect([unreachable.code, unreachable.transient]).toEqual(['hub-unreachable', true]);
    expect(unreachable.message).toContain('cannot reach the hub at http://127.0.0.1:1');
  });

  it("tells the hub's typed 'credential gone' from a bare 401/403 a proxy could send", async () => {
    const { credential } = await client.register('east', hub.bootstrapToken);
    hub.proxyAnswers.push({ status: 401 }, { status: 403 });
    for (const status of [401, 403]) {
      const bare = await failure(client.assignments(credential, undefined, 0));
      expect([bare.code, bare.status, bare.apiCode]).toEqual(['hub-unauthorized', status, undefined]);
    }
    hub.refuseCredential(AGENT_REFUSAL.credentialRevoked);
    const gone = await failure(client.assignments(credential, undefined, 0));
    expect([gone.code, gone.status, gone.apiCode]).toEqual([
      'hub-credential-gone',
      401,
      'credential-revoked',
    ]);
    const unknown = await failure(client.assignments('never-issued', undefined, 0));
    expect([unknown.code, unknown.apiCode]).toEqual(['hub-credential-gone', 'credential-unknown']);
    await client.register('east', hub.bootstrapToken);
  });
});
