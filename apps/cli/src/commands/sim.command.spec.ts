import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { serve } from './sim.command.js';

describe('flotilla sim', () => {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-sim-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  afterEach(() => vi.restoreAllMocks());

  it.each([
    [[], '--clusters is required'],
    [['--clusters', '0', '--kubeconfig-dir', dir], "--clusters must be a positive integer, not '0'"],
    [['--clusters', 'two', '--kubeconfig-dir', dir], "--clusters must be a positive integer, not 'two'"],
    [['--clusters', '1'], '--kubeconfig-dir is required'],
    [['--clusters', '1', '--kubeconfig-dir', dir, '--bogus'], "unknown option '--bogus'"],
  ])('%j is a usage error: exit 2, one line on stderr', async (argv, message) => {
    const stderr = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const out: string[] = [];
    expect(await serve(argv, Promise.resolve(), (l) => out.push(l))).toBe(2);
    expect(out).toEqual([]);
    expect(stderr).toHaveBeenCalledTimes(1);
    const line = String(stderr.mock.calls[0]?.[0]);
    expect(line.startsWith('flotilla sim: ')).toBe(true);
    expect(line).toContain(message);
    expect(line).not.toContain('\n');
  });

  it('serves N clusters with kubeconfigs, prints one ready line, and stops cleanly', async () => {
    const out: string[] = [];
    let stop!: () => void;
    const until = new Promise<void>((resolve) => (stop = resolve));
    const done = serve(['--clusters', '2', '--kubeconfig-dir', dir, '--name-prefix', 'edge-'], until, (l) =>
      out.push(l),
    );
    await expect.poll(() => out).toEqual(['ready 2\n']);
    const servers: string[] = [];
    for (const name of ['edge-1', 'edge-2']) {
      const file = join(dir, `${name}.kubeconfig`);
      expect(existsSync(file)).toBe(true);
      const kc = parse(readFileSync(file, 'utf8')) as {
        'current-context': string;
        clusters: { name: string; cluster: { server: string; 'insecure-skip-tls-verify': boolean } }[];
      };
      expect(kc['current-context']).toBe(name);
      const cluster = kc.clusters[0]!.cluster;
      expect(cluster['insecure-skip-tls-verify']).toBe(true);
      expect(cluster.server).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const version = (await (await fetch(`${cluster.server}/version`)).json()) as { minor: string };
      expect(version.minor).toBe('32');
      servers.push(cluster.server);
    }
    expect(new Set(servers).size).toBe(2);
    stop();
    expect(await done).toBe(0);
    await expect(fetch(`${servers[0]}/version`)).rejects.toThrow();
  });
});
