import { execFileSync } from 'node:child_process';
import {
  createReadStream,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { resolveHelmBinary } from '@flotilla/manifests/node';

export interface TestChart {
  name: string;
  version: string;
  /** Files of the chart besides Chart.yaml, by path relative to the chart (`templates/x.yaml`). */
  files: Record<string, string>;
}

export interface TestHelmRepository {
  /** `http://127.0.0.1:<port>/charts`, as a source's repoURL names it. */
  url: string;
  /**
   * Packages a chart with `helm package` (signed, writing its `.prov` beside it, when `sign` names
   * a key of a legacy secret keyring) and re-indexes the repository with `helm repo index`.
   */
  publish(chart: TestChart, sign?: ChartSigningKey): void;
  /** Serves `content` as the file `name` of the repository (`web-1.0.0.tgz.prov`); null removes it. */
  serve(name: string, content: string | Buffer | null): void;
  /** The file `name` the repository serves. */
  read(name: string): Buffer;
  /** Every request path the server has answered, in order (`/charts/index.yaml`, …). */
  requests: string[];
  stop(): Promise<void>;
}

/** What `helm package --sign` signs with: a key's name and the secret keyring holding it (`gpg --export-secret-keys`). */
export interface ChartSigningKey {
  key: string;
  secretKeyring: string;
}

/**
 * A real Helm repository on 127.0.0.1: charts packaged by the real `helm package`, an index.yaml
 * written by `helm repo index`, served by a small static HTTP server (behind Basic auth if asked).
 */
export async function startTestHelmRepository(
  charts: TestChart[] = [],
  /** When set, every request must carry these as HTTP Basic credentials (else 401). */
  auth?: { username: string; password: string },
): Promise<TestHelmRepository> {
  const helm = resolveHelmBinary({ PATH: process.env['PATH'] ?? '' });
  if (!helm) throw new Error('no helm: run npm ci (it unpacks Helm under node_modules/.cache)');
  const root = mkdtempSync(join(tmpdir(), 'flotilla-helm-repo-'));
  const served = join(root, 'served', 'charts');
  mkdirSync(served, { recursive: true });
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const path = normalize(decodeURIComponent((req.url ?? '/').split('?')[0] ?? '/'));
    requests.push(path);
    const expected = auth && `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
    if (expected && req.headers.authorization !== expected) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="charts"' }).end('unauthorized');
      return;
    }
    const file = join(root, 'served', path);
    if (!file.startsWith(join(root, 'served') + '/') || !isFile(file)) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'content-length': statSync(file).size });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const env = { PATH: process.env['PATH'] ?? '', HOME: root, HELM_CACHE_HOME: join(root, 'h') };
  const repo: TestHelmRepository = {
    url: `http://127.0.0.1:${port}/charts`,
    requests,
    publish(chart, sign) {
      packageTestChart(helm.path, chart, join(root, 'src'), served, env, sign);
      execFileSync(helm.path, ['repo', 'index', served], { env, stdio: 'pipe' });
    },
    serve(name, content) {
      if (content === null) rmSync(join(served, name), { force: true });
      else writeFileSync(join(served, name), content);
    },
    read: (name) => readFileSync(join(served, name)),
    stop: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(root, { recursive: true, force: true });
    },
  };
  try {
    for (const c of charts) repo.publish(c);
  } catch (e) {
    await repo.stop();
    throw e;
  }
  return repo;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Writes `chart` (its Chart.yaml and files) under `srcDir` and packages it into `outDir` with the real `helm package`. */
export function packageTestChart(
  helm: string,
  chart: TestChart,
  srcDir: string,
  outDir: string,
  env: Record<string, string>,
  sign?: ChartSigningKey,
): string {
  const dir = join(srcDir, `${chart.name}-${chart.version}`, chart.name);
  const files = {
    'Chart.yaml': `apiVersion: v2\nname: ${chart.name}\nversion: ${chart.version}\n`,
    ...chart.files,
  };
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  const signing = sign ? ['--sign', '--key', sign.key, '--keyring', sign.secretKeyring] : [];
  execFileSync(helm, ['package', dir, '--destination', outDir, ...signing], { env, stdio: 'pipe' });
  return join(outDir, `${chart.name}-${chart.version}.tgz`);
}
