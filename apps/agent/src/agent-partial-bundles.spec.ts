import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AssignmentsResponse, type KubeObject } from '@flotilla/contract';
import { AgentHarness, loadFixture, pollOptions as poll } from './testing/agent-harness.js';

const manifests = loadFixture('bundle-web.yaml');
const withGreeting = (greeting: string): KubeObject[] =>
  manifests.map((m) => (m.kind === 'ConfigMap' ? { ...m, data: { greeting } } : m));
const other = (value: string): KubeObject[] => [
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'other-config' }, data: { value } },
];

describe('agent: a partial bundle failure saves what was applied (#14 defect 7)', () => {
  let h: AgentHarness;
  beforeAll(async () => {
    h = await AgentHarness.start('north');
  });
  afterAll(async () => {
    await h.stop();
  });

  it('a restart while the hub is down resumes at the applied revision, not the one before', async () => {
    const stateDir = join(h.dir, 'state');
    const webV1 = h.hub.addBundle(withGreeting('v1'));
    const otherV1 = h.hub.addBundle(other('v1'));
    const second = { targetId: 'target-other', name: 'other-north', appSet: 'other' };
    // The other target's ConfigMap lives in the namespace the web bundle declares, and nothing orders
    // two targets' first syncs: the web target goes first, so the other one never races its namespace.
    h.hub.setAssignments([h.assignment({ bundleDigest: webV1 })]);
    const first = await h.runAgent({ stateDir });
    await expect.poll(() => h.syncs().length, poll).toBe(1);
    h.hub.setAssignments([
      h.assignment({ bundleDigest: webV1 }),
      h.assignment({ ...second, bundleDigest: otherV1 }),
    ]);
    await expect.poll(() => h.syncs().length, poll).toBe(2);
    expect(h.syncs().map((s) => s.outcome)).toEqual(['Succeeded', 'Succeeded']);

    // rev-2: the web bundle arrives, the other target's bundle the hub does not send.
    const webV2 = h.hub.addBundle(withGreeting('v2'));
    const missing = `sha256:${'d'.repeat(64)}`;
    h.hub.setAssignments([
      h.assignment({ bundleDigest: webV2, revision: 'rev-2' }),
      h.assignment({ ...second, bundleDigest: missing, revision: 'rev-2' }),
    ]);
    await expect
      .poll(() => h.syncs().some((s) => s.targetId === 'target-web' && s.revision === 'rev-2'), poll)
      .toBe(true);
    const saved = JSON.parse(
      await readFile(join(stateDir, 'assignments.json'), 'utf8'),
    ) as AssignmentsResponse;
    expect(saved.assignments.map((a) => [a.targetId, a.revision, a.bundleDigest])).toEqual([
      ['target-web', 'rev-2', webV2],
      ['target-other', 'rev-1', otherV1],
    ]);

    await first.stop();
    await h.hub.stop();
    await h.runAgent({ stateDir });
    // A change out of band is healed back to what rev-2 declares: the restarted agent runs rev-2.
    await h.edit('ConfigMap', 'web-config', { data: { greeting: 'edited' } });
    await expect
      .poll(
        async () => ((await h.read('ConfigMap', 'web-config')) as { data?: unknown } | undefined)?.data,
        poll,
      )
      .toEqual({ greeting: 'v2' });
    expect(((await h.read('ConfigMap', 'other-config')) as { data?: unknown } | undefined)?.data).toEqual({
      value: 'v1',
    });
  });
});
