import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentHarness, loadFixture, pollOptions as poll } from './testing/agent-harness.js';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';

/**
 * The built entry points: `dist/main.js` from tsc, and the bundle that `flotilla-agent` and the
 * deployment run (`dist/bundle/flotilla-agent.mjs`, rolldown.config.mjs). Both must behave the same.
 */
const ENTRY_POINTS = ['dist/main.js', 'dist/bundle/flotilla-agent.mjs'].map((name) => ({
  name,
  path: fileURLToPath(new URL(`../${name}`, import.meta.url)),
}));

interface Run {
  child: ChildProcess;
  stdout: string[];
  stderr: string;
  exit: Promise<number | null>;
}

function run(main: string, env: Record<string, string>): Run {
  const child = spawn(process.execPath, [main], { env: { PATH: process.env['PATH'] ?? '', ...env } });
  const r: Run = {
    child,
    stdout: [],
    stderr: '',
    exit: new Promise((resolve) => child.once('exit', resolve)),
  };
  let buffered = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    r.stdout.push(...lines);
  });
  child.stderr?.on('data', (chunk: Buffer) => (r.stderr += chunk.toString()));
  return r;
}

describe.each(ENTRY_POINTS.filter((e) => existsSync(e.path)))(
  'flotilla-agent (built: $name)',
  ({ path: MAIN }) => {
    let h: AgentHarness;
    const children: ChildProcess[] = [];
    beforeAll(async () => {
      h = await AgentHarness.start('south');
    });
    afterAll(async () => {
      for (const c of children) if (c.exitCode === null && c.pid) process.kill(c.pid, 'SIGKILL');
      await h.stop();
    });

    it('stops at start with the name of each wrong variable and why', async () => {
      const r = run(MAIN, { FLOTILLA_HUB_URL: 'not a url', FLOTILLA_RESYNC_SECONDS: 'often' });
      children.push(r.child);
      expect(await r.exit).toBe(2);
      expect(r.stderr).toContain('FLOTILLA_HUB_URL: must be an http(s) URL');
      expect(r.stderr).toContain('FLOTILLA_CLUSTER_NAME: is required');
      expect(r.stderr).toContain('FLOTILLA_RESYNC_SECONDS: must be a whole number of seconds');
    });

    it(
      'refuses to start with nothing to resume and no bootstrap token, or an unreadable kubeconfig',
      { timeout: 120_000 },
      async () => {
        const noToken = run(MAIN, {
          FLOTILLA_HUB_URL: h.hub.url,
          FLOTILLA_CLUSTER_NAME: 'south',
          FLOTILLA_STATE_DIR: join(h.dir, 'empty-state'),
        });
        const noKubeconfig = run(MAIN, {
          FLOTILLA_HUB_URL: h.hub.url,
          FLOTILLA_CLUSTER_NAME: 'south',
          FLOTILLA_BOOTSTRAP_TOKEN: 'x',
          KUBECONFIG: join(h.dir, 'missing.kubeconfig'),
          FLOTILLA_STATE_DIR: join(h.dir, 'empty-state'),
        });
        children.push(noToken.child, noKubeconfig.child);
        expect(await Promise.all([noToken.exit, noKubeconfig.exit])).toEqual([2, 2]);
        expect(noToken.stderr).toContain('flotilla-agent: FLOTILLA_BOOTSTRAP_TOKEN: no agent credential in');
        expect(noKubeconfig.stderr).toContain(
          `flotilla-agent: KUBECONFIG: cannot read the kubeconfig ${join(h.dir, 'missing.kubeconfig')}`,
        );
      },
    );

    it('syncs, logs JSON, and exits 0 on SIGTERM', { timeout: 120_000 }, async () => {
      const kubeconfig = join(h.dir, 'south.kubeconfig');
      await writeFile(kubeconfig, h.sim.kubeconfig());
      const digest = h.hub.addBundle(loadFixture('bundle-web.yaml'));
      h.hub.setAssignments([h.assignment({ bundleDigest: digest })]);
      const r = run(MAIN, {
        FLOTILLA_HUB_URL: h.hub.url,
        FLOTILLA_CLUSTER_NAME: 'south',
        FLOTILLA_BOOTSTRAP_TOKEN: h.hub.bootstrapToken,
        KUBECONFIG: kubeconfig,
        FLOTILLA_STATE_DIR: join(h.dir, 'state'),
      });
      children.push(r.child);
      // A cold Node start that loads client-node can take many seconds on a busy machine.
      await expect
        .poll(() => h.syncs().map((s) => s.outcome), { ...poll, timeout: 60_000 })
        .toEqual(['Succeeded']);

      r.child.kill('SIGTERM');
      expect(await r.exit).toBe(0);
      const logs = r.stdout.map((l) => JSON.parse(l) as { level: number; msg: string; cluster?: string });
      expect(logs.map((l) => l.msg)).toEqual(
        expect.arrayContaining(['agent started', 'sync finished', 'agent stopped']),
      );
      expect(logs.every((l) => typeof l.level === 'number')).toBe(true);
    });
  },
);
