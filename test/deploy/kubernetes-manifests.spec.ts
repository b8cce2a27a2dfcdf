import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimCluster, type SimCluster } from '@flotilla/kube-sim';
import { parseManifestFiles } from '@flotilla/manifests';
import { REPO_ROOT } from '@flotilla/cli/fleet';
import { runOk } from './deploy-tools.js';

/** kubectl, asynchronously: the simulator answers from this same process, so nothing may block it. */
const kubectl = (args: string[], env: NodeJS.ProcessEnv, input?: string) =>
  runOk('kubectl', args, env, input);
const manifestDirs = ['deploy/kubernetes/agent', 'deploy/kubernetes/hub'];

/** The shipped Kubernetes manifests must stay valid: parsed as bundles are, and accepted by an API server. */
describe('deploy/kubernetes manifests', () => {
  const work = mkdtempSync(join(tmpdir(), 'flotilla-deploy-'));
  let sim: SimCluster;

  beforeAll(async () => {
    sim = await startSimCluster({ name: 'deploy-check', kubeconfigDir: work });
  });
  afterAll(async () => {
    await sim?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  for (const dir of manifestDirs) {
    it(`${dir} parses and is accepted by kubectl apply --server-side --dry-run=server`, async () => {
      const files = readdirSync(join(REPO_ROOT, dir)).map((name) => ({
        path: name,
        content: readFileSync(join(REPO_ROOT, dir, name), 'utf8'),
      }));
      const objects = parseManifestFiles(files);
      expect(objects.length).toBeGreaterThan(1);

      // Namespaces must exist before a server-side dry run of what lives in them.
      const namespaces = objects.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name);
      const env = { ...process.env, KUBECONFIG: sim.kubeconfigPath!, KUBECACHEDIR: join(work, 'cache') };
      for (const ns of namespaces) {
        await kubectl(
          ['apply', '--server-side', '-f', '-'],
          env,
          JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }),
        );
      }
      const stdout = await kubectl(
        ['apply', '--server-side', '--dry-run=server', '-f', join(REPO_ROOT, dir)],
        env,
      );
      for (const o of objects) expect(stdout).toContain(o.metadata.name);
    });
  }

  it('grants the agent only the verbs it uses, and nothing that raises its own rights', () => {
    const content = readFileSync(join(REPO_ROOT, 'deploy/kubernetes/agent/agent.yaml'), 'utf8');
    const roles = parseManifestFiles([{ path: 'agent.yaml', content }]).filter((o) =>
      ['ClusterRole', 'Role'].includes(o.kind),
    );
    expect(roles.map((r) => r.metadata.name)).toEqual(['flotilla-agent']);
    const rules = (roles[0] as unknown as { rules: { verbs: string[] }[] }).rules;
    const verbs = new Set(rules.flatMap((r) => r.verbs));
    expect([...verbs].sort()).toEqual(['create', 'delete', 'get', 'list', 'patch', 'watch']);
  });
});
