import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_REFUSAL } from '@flotilla/contract';
import type {
  AssignmentsResponse,
  BundleBatchResponse,
  RegisterResponse,
  RotateResponse,
} from '@flotilla/contract';
import { createTestGitRepo, waitForIdleQueues, type TestGitRepo, type TestHub } from '@flotilla/hub/testing';
import { caller, sql, startSecureHub, tableCounts, waitUntil, type Refusal } from './security-hub.js';

// Agent identity on a real hub: bootstrap tokens, agent credentials, rotation and revocation, and
// one agent trying to read what belongs to another cluster.

const CONFIGMAP = (region: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  region: ${region}\n`;

let hub: TestHub;
let repo: TestGitRepo;
let call: ReturnType<typeof caller>;
const bootstrap: Record<string, string> = {};
const credential: Record<string, string> = {};

async function addCluster(name: string): Promise<string> {
  const r = await call<{ bootstrapToken: string }>('POST', '/api/v1/clusters', { body: { name } });
  expect(r.status).toBe(201);
  return r.body.bootstrapToken;
}

function register(clusterName: string, bootstrapToken: string) {
  return call<RegisterResponse & Refusal>('POST', '/api/agent/v1/register', {
    body: { clusterName, bootstrapToken },
    token: null,
  });
}

async function clusterRow(name: string) {
  const [row] = await sql(
    hub,
    'SELECT "credentialHash", "previousCredentialHash" FROM "Cluster" WHERE name = $1',
    [name],
  );
  return row;
}

describe('agent identity', () => {
  beforeAll(async () => {
    repo = createTestGitRepo({
      'apps/eu1/config.yaml': CONFIGMAP('eu1'),
      'apps/us1/config.yaml': CONFIGMAP('us1'),
    });
    hub = await startSecureHub({
      AGENT_CREDENTIAL_ROTATION_GRACE_SECONDS: '2',
      RATE_LIMIT_AGENT_PER_MINUTE: '40',
    });
    call = caller(hub);
    for (const name of ['eu1', 'us1', 'noisy']) bootstrap[name] = await addCluster(name);
    for (const name of ['eu1', 'us1']) {
      const r = await register(name, bootstrap[name]!);
      expect(r.status).toBe(200);
      credential[name] = r.body.credential;
    }
    const appset = await call('POST', '/api/v1/appsets', {
      body: {
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'ApplicationSet',
        metadata: { name: 'web' },
        spec: {
          generators: [{ list: { elements: [{ cluster: 'eu1' }, { cluster: 'us1' }] } }],
          template: {
            metadata: { name: 'web-{{cluster}}' },
            spec: {
              source: { repoURL: repo.url, targetRevision: 'HEAD', path: 'apps/{{cluster}}' },
              destination: { name: '{{cluster}}', namespace: 'web' },
            },
          },
        },
      },
    });
    expect(appset.status).toBe(201);
    await waitUntil(
      'appset web to be Ready',
      async () => (await call<{ status: string }>('GET', '/api/v1/appsets/web')).body.status,
      (status) => status === 'Ready',
    );
    await waitForIdleQueues(hub.app);
  }, 180_000);

  afterAll(async () => {
    await hub?.close();
    repo?.remove();
  }, 60_000);

  it('refuses forged, misdirected, reused and expired bootstrap tokens, changing nothing', async () => {
    const token = bootstrap['noisy']!;
    await sql(
      hub,
      `UPDATE "BootstrapToken" SET "expiresAt" = now() - interval '1 second' WHERE "usedAt" IS NULL`,
    );
    const before = await tableCounts(hub);
    const cases: [string, string, string, string, RegExp][] = [
      ['forged', 'noisy', 'flb_never-issued-by-this-hub', 'bootstrap-token-invalid', /not known to this hub/],
      ["another cluster's", 'eu1', token, 'bootstrap-token-invalid', /issued for another cluster, not "eu1"/],
      ['reused', 'eu1', bootstrap['eu1']!, 'bootstrap-token-used', /already used at .*single-use/],
      ['expired', 'noisy', token, 'bootstrap-token-expired', /expired at \d{4}-.*ask an admin for a new one/],
    ];
    for (const [what, cluster, bootstrapToken, code, message] of cases) {
      const r = await register(cluster, bootstrapToken);
      expect(r.status, what).toBe(401);
      expect(r.body.code, what).toBe(code);
      expect(r.body.message, what).toMatch(message);
    }
    expect(await tableCounts(hub)).toEqual(before);
    expect((await clusterRow('noisy'))?.['credentialHash']).toBeNull();
  });

  it('refuses a forged agent credential with 401, and changes nothing', async () => {
    const before = await tableCounts(hub);
    for (const bad of ['fla_forged', `${credential['eu1']}x`]) {
      const r = await call<Refusal>('GET', '/api/agent/v1/assignments?wait=0', { token: bad });
      expect(r.status).toBe(401);
      expect(r.body).toEqual({
        code: AGENT_REFUSAL.credentialUnknown,
        message: 'unknown agent credential; register the agent again with a new bootstrap token',
        requestId: expect.stringMatching(/^\S+$/) as string,
      });
    }
    expect(await tableCounts(hub)).toEqual(before);
  });

  it("shows an agent only its own assignments; another cluster's bundle is a 404 and audited", async () => {
    const eu1 = await call<AssignmentsResponse>('GET', '/api/agent/v1/assignments?wait=0', {
      token: credential['eu1'],
    });
    const us1 = await call<AssignmentsResponse>('GET', '/api/agent/v1/assignments?wait=0', {
      token: credential['us1'],
    });
    expect(eu1.body.assignments.map((a) => a.name)).toEqual(['web-eu1']);
    expect(us1.body.assignments.map((a) => a.name)).toEqual(['web-us1']);
    // A query naming another cluster changes nothing: the credential alone picks the cluster.
    const sneaky = await call<AssignmentsResponse>('GET', '/api/agent/v1/assignments?wait=0&cluster=us1', {
      token: credential['eu1'],
    });
    expect(sneaky.body.clusterName).toBe('eu1');
    expect(sneaky.body.assignments.map((a) => a.name)).toEqual(['web-eu1']);

    const theirs = us1.body.assignments[0]!.bundleDigest;
    const before = await tableCounts(hub);
    const r = await call<Refusal>('GET', `/api/agent/v1/bundles/${theirs}`, { token: credential['eu1'] });
    expect(r.status).toBe(404);
    expect(r.body).toEqual({
      code: 'not-found',
      message: `bundle ${theirs} is not assigned to this cluster`,
      requestId: expect.stringMatching(/^\S+$/) as string,
    });
    const audit = await sql(
      hub,
      `SELECT actor, action, scope, details - 'origin' AS details, details->'origin'->>'ip' AS "fromIp"
       FROM "AuditEvent" WHERE action = 'agent.access-denied' ORDER BY id`,
    );
    expect(audit).toEqual([
      {
        actor: 'agent:eu1',
        action: 'agent.access-denied',
        scope: 'cluster:eu1',
        details: {
          resource: 'bundle',
          digest: theirs,
          assignedElsewhere: true,
        },
        // From where: the agent's address is recorded with the attempt.
        fromIp: audit[0]?.['fromIp'],
      },
    ]);
    expect(audit[0]?.['fromIp']).toMatch(/127\.0\.0\.1$/);
    // The audit event is the only change.
    expect(await tableCounts(hub)).toEqual({ ...before, AuditEvent: before['AuditEvent']! + 1 });

    // The same through the batch endpoint: its own bundle comes, theirs is refused and audited alike.
    const mine = eu1.body.assignments[0]!.bundleDigest;
    const batch = await call<BundleBatchResponse>('POST', '/api/agent/v1/bundles/batch', {
      token: credential['eu1'],
      body: { digests: [mine, theirs] },
    });
    expect(batch.status).toBe(200);
    expect(batch.body.bundles.map((b) => b.digest)).toEqual([mine]);
    expect(batch.body.refused).toEqual([theirs]);
    const batchAudit = await sql(
      hub,
      `SELECT actor, details - 'origin' AS details FROM "AuditEvent"
        WHERE action = 'agent.access-denied' ORDER BY id`,
    );
    expect(batchAudit.at(-1)).toEqual({
      actor: 'agent:eu1',
      details: { resource: 'bundle', digest: theirs, assignedElsewhere: true },
    });
    expect(await tableCounts(hub)).toEqual({ ...before, AuditEvent: before['AuditEvent']! + 2 });
  });

  it("makes a report about another cluster's target harmless, and audits it", async () => {
    const target = (await sql(hub, `SELECT id FROM "Target" WHERE name = 'web-us1'`))[0]!['id'] as string;
    const at = new Date().toISOString();
    const r = await call<{ accepted: number }>('POST', '/api/agent/v1/reports', {
      token: credential['eu1'],
      body: {
        reports: [
          {
            type: 'health',
            id: 'forged-health-1',
            targetId: target,
            at,
            status: 'Degraded',
            message: 'written by the wrong agent',
          },
        ],
      },
    });
    expect(r.status).toBe(200);
    const [row] = await sql(hub, `SELECT health, "healthMessage" FROM "Target" WHERE name = 'web-us1'`);
    expect(row).toEqual({ health: 'Unknown', healthMessage: '' });
    const audit = await sql(
      hub,
      `SELECT action, details - 'origin' AS details, details->'origin'->>'ip' AS "fromIp"
       FROM "AuditEvent" WHERE action = 'agent.access-denied' AND scope = 'target:web-us1'`,
    );
    expect(audit).toEqual([
      {
        action: 'agent.access-denied',
        details: {
          resource: 'report',
          reportId: 'forged-health-1',
          type: 'health',
        },
        fromIp: audit[0]?.['fromIp'],
      },
    ]);
    expect(audit[0]?.['fromIp']).toMatch(/127\.0\.0\.1$/);
  });

  it("refuses a sync report naming another cluster's bundle (a rollback or not): no pin, no history, audited", async () => {
    const assignment = async (cluster: string) =>
      (
        await call<AssignmentsResponse>('GET', '/api/agent/v1/assignments?wait=0', {
          token: credential[cluster],
        })
      ).body.assignments[0]!;
    const mine = await assignment('eu1');
    const theirs = await assignment('us1');
    expect(theirs.bundleDigest).not.toBe(mine.bundleDigest);
    const at = new Date().toISOString();
    const sync = (id: string, to: { revision: string; bundleDigest: string }, trigger: string) => ({
      type: 'sync',
      id,
      targetId: mine.targetId,
      at,
      revision: to.revision,
      bundleDigest: to.bundleDigest,
      trigger,
      outcome: 'Succeeded',
      startedAt: at,
      finishedAt: at,
      ...(trigger === 'rollback' && {
        rolledBackFrom: { revision: mine.revision, bundleDigest: mine.bundleDigest, reason: 'degraded' },
      }),
    });
    const targetState = () =>
      sql(
        hub,
        `SELECT t."releasedDigest", t."lastSyncedDigest", p."bundleDigest" AS "pinned"
           FROM "Target" t LEFT JOIN "TargetPin" p ON p."targetId" = t.id WHERE t.name = 'web-eu1'`,
      );
    const before = await tableCounts(hub);
    const state = await targetState();
    const r = await call<{ accepted: number }>('POST', '/api/agent/v1/reports', {
      token: credential['eu1'],
      body: {
        reports: [sync('steal-rollback', theirs, 'rollback'), sync('steal-auto', theirs, 'auto')],
      },
    });
    expect(r.status).toBe(200);
    // Stored as seen (a replay stays harmless), but nothing believed: no pin, no run, no status.
    expect(await targetState()).toEqual(state);
    expect(await tableCounts(hub)).toEqual({
      ...before,
      ProcessedReport: before['ProcessedReport']! + 2,
      AuditEvent: before['AuditEvent']! + 2,
    });
    const audit = await sql(
      hub,
      `SELECT actor, scope, details - 'origin' AS details FROM "AuditEvent"
        WHERE action = 'agent.access-denied' AND details->>'resource' = 'report' AND scope = 'target:web-eu1'
        ORDER BY id`,
    );
    expect(audit).toEqual([
      {
        actor: 'agent:eu1',
        scope: 'target:web-eu1',
        details: {
          resource: 'report',
          reportId: 'steal-rollback',
          type: 'sync',
          reason: 'a rollback may only go to a revision and bundle this target ran',
          revision: theirs.revision,
          bundleDigest: theirs.bundleDigest,
        },
      },
      {
        actor: 'agent:eu1',
        scope: 'target:web-eu1',
        details: {
          resource: 'report',
          reportId: 'steal-auto',
          type: 'sync',
          reason: 'the report names a revision and bundle the hub did not assign to this target',
          revision: theirs.revision,
          bundleDigest: theirs.bundleDigest,
        },
      },
    ]);
    // Their bundle is still not served to this cluster.
    const bundle = await call('GET', `/api/agent/v1/bundles/${theirs.bundleDigest}`, {
      token: credential['eu1'],
    });
    expect(bundle.status).toBe(404);

    // Its own assignment is still believed, and in the same batch a rollback to what it just ran.
    const own = await call('POST', '/api/agent/v1/reports', {
      token: credential['eu1'],
      body: { reports: [sync('own-sync', mine, 'auto'), sync('own-rollback', mine, 'rollback')] },
    });
    expect(own.status).toBe(200);
    expect(await targetState()).toEqual([
      { ...state[0], lastSyncedDigest: mine.bundleDigest, pinned: mine.bundleDigest },
    ]);
    expect(
      await sql(
        hub,
        `SELECT "agentReportId", actor FROM "SyncRun" s JOIN "AuditEvent" a
        ON a.details->>'reportId' = s."agentReportId" AND a.action = 'sync.succeeded' ORDER BY s."agentReportId"`,
      ),
    ).toEqual([
      { agentReportId: 'own-rollback', actor: 'agent:eu1' },
      { agentReportId: 'own-sync', actor: 'agent:eu1' },
    ]);
  });

  it('rotates a credential: the old one works for the grace period, then is refused; only the current may rotate', async () => {
    const old = credential['us1']!;
    const rotated = await call<RotateResponse>('POST', '/api/agent/v1/rotate', { token: old });
    expect(rotated.status).toBe(200);
    expect(rotated.body.clusterName).toBe('us1');
    expect(rotated.body.credential).toMatch(/^fla_/);
    const fresh = rotated.body.credential;
    expect(fresh).not.toBe(old);
    credential['us1'] = fresh;

    // Both work during the grace period (requests in flight with the old one are not lost).
    for (const token of [old, fresh]) {
      expect((await call('GET', '/api/agent/v1/assignments?wait=0', { token })).status).toBe(200);
    }
    // A copy of the old credential cannot mint another one.
    const before = await tableCounts(hub);
    const again = await call<Refusal>('POST', '/api/agent/v1/rotate', { token: old });
    expect(again.status).toBe(401);
    expect(again.body.code).toBe(AGENT_REFUSAL.credentialRotated);
    expect(await tableCounts(hub)).toEqual(before);

    await expect
      .poll(
        async () =>
          (await call<Refusal>('GET', '/api/agent/v1/assignments?wait=0', { token: old })).body.code,
        {
          timeout: 10_000,
          interval: 250,
        },
      )
      .toBe('credential-rotated');
    expect((await call('GET', '/api/agent/v1/assignments?wait=0', { token: fresh })).status).toBe(200);
    const audit = await sql(
      hub,
      `SELECT actor FROM "AuditEvent" WHERE action = 'cluster.credential-rotated'`,
    );
    expect(audit).toEqual([{ actor: 'agent:us1' }]);
  });

  it('refuses a revoked agent at once, with its current and its in-grace credential', async () => {
    const old = credential['eu1']!;
    const rotated = await call<RotateResponse>('POST', '/api/agent/v1/rotate', { token: old });
    const fresh = rotated.body.credential;
    const revoke = await call('POST', '/api/v1/clusters/eu1/revoke-credential');
    expect(revoke.status).toBe(201);
    const before = await tableCounts(hub);
    for (const token of [fresh, old]) {
      const r = await call<Refusal>('GET', '/api/agent/v1/assignments?wait=0', { token });
      expect(r.status).toBe(401);
      expect(r.body.code).toMatch(/^credential-revoked$|^credential-unknown$/);
      expect(r.body.message).toMatch(/revoked|unknown agent credential/);
    }
    const rotate = await call<Refusal>('POST', '/api/agent/v1/rotate', { token: fresh });
    expect(rotate.status).toBe(401);
    expect(await tableCounts(hub)).toEqual(before);
  });

  it('rate-limits each agent on its own: 429 with Retry-After', async () => {
    const us1 = credential['us1']!;
    let refused: { status: number; body: Refusal; headers: Headers } | undefined;
    // 40 a minute; a window may restart once during the loop, so up to 2 × 40 + 1 calls.
    for (let i = 0; i < 81 && !refused; i++) {
      const r = await call<Refusal>('GET', '/api/agent/v1/assignments?wait=0', { token: us1 });
      if (r.status === 429) refused = r;
      else expect(r.status).toBe(200);
    }
    expect(refused?.body.code).toBe('rate-limited');
    expect(refused?.body.message).toMatch(
      /^the agent of cluster "us1" made more than 40 requests this minute; retry after \d+ s$/,
    );
    expect(Number(refused?.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });
});
