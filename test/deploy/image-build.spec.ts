import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '@flotilla/cli/fleet';
import { run } from './deploy-tools.js';

interface Stage {
  name: string;
  workdir: string;
  copiesFromBuild: { from: string; to: string }[];
  runs: string[];
  cmd: string[];
}

/** The Dockerfile's stages as far as this check needs them (its RUN, COPY --from=build, WORKDIR, CMD). */
function stagesOf(dockerfile: string): Stage[] {
  const stages: Stage[] = [];
  // Continuation lines joined, so each instruction is one line.
  for (const line of dockerfile.replace(/\\\n\s*/g, ' ').split('\n')) {
    const [, instruction = '', rest = ''] = /^(\w+)\s+(.*)$/.exec(line.trim()) ?? [];
    const stage = stages[stages.length - 1];
    if (instruction === 'FROM') {
      const name = / AS (\S+)$/i.exec(rest)?.[1] ?? `#${stages.length}`;
      stages.push({ name, workdir: '/', copiesFromBuild: [], runs: [], cmd: [] });
    } else if (!stage) continue;
    else if (instruction === 'WORKDIR') stage.workdir = rest;
    else if (instruction === 'RUN') stage.runs.push(rest);
    else if (instruction === 'CMD') stage.cmd = JSON.parse(rest) as string[];
    else if (instruction === 'COPY' && rest.startsWith('--from=build ')) {
      const [from, to] = rest.slice('--from=build '.length).split(/\s+/);
      stage.copiesFromBuild.push({ from: from!, to: to! });
    }
  }
  return stages;
}

const dockerfile = readFileSync(join(REPO_ROOT, 'deploy/docker/Dockerfile'), 'utf8');
const stages = stagesOf(dockerfile);
const stage = (name: string) => {
  const s = stages.find((x) => x.name === name);
  if (!s) throw new Error(`deploy/docker/Dockerfile has no stage ${name}`);
  return s;
};
/** What a stage's image holds of the build at `path` (inside its WORKDIR), as a repository path. */
function fromBuild(s: Stage, path: string): string | undefined {
  const absolute = path.startsWith('/') ? path : join(s.workdir, path);
  for (const c of s.copiesFromBuild) {
    const to = c.to.replace(/\/$/, '');
    if (absolute === to || absolute.startsWith(`${to}/`)) {
      const source = join(c.from, absolute.slice(to.length));
      return source.startsWith('/src') ? source.slice('/src'.length).replace(/^\//, '') : undefined;
    }
  }
  return undefined;
}
/** Every `node <file>` the shipped Kubernetes manifests run. */
const manifestEntrypoints = readdirSync(join(REPO_ROOT, 'deploy/kubernetes'), { recursive: true })
  .map(String)
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((f) => [
    ...readFileSync(join(REPO_ROOT, 'deploy/kubernetes', f), 'utf8').matchAll(
      /command:\s*\[\s*'node',\s*'([^']+)'/g,
    ),
  ])
  .map((m) => m[1]!);

/**
 * The image must contain what its manifests run, made by its own build steps — a hub image once
 * shipped without the agent bundle that deploy/kubernetes/agent starts. No image can be built here
 * (no registry), so this checks the Dockerfile's own steps against the repository's build: the build
 * stage runs `npm ci` and `npm run build`, which (as `npm test` did before this ran) produce each
 * entrypoint, and each final stage copies it from the build stage.
 */
describe('deploy/docker/Dockerfile builds what the images and manifests run', () => {
  const work = mkdtempSync(join(tmpdir(), 'flotilla-image-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('has build, hub and agent stages, and the build runs npm ci and npm run build', () => {
    const build = stage('build').runs.join(' && ');
    expect(build).toMatch(/\bnpm ci\b/);
    expect(build).toMatch(/\bnpm run build\b/);
    const root = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(root.scripts['build']).toBe('nx run-many -t build');
    for (const app of ['hub', 'agent', 'cli']) {
      const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'apps', app, 'package.json'), 'utf8')) as {
        scripts?: Record<string, string>;
      };
      expect(pkg.scripts?.['build'], `apps/${app} has a build script`).toBeTruthy();
    }
    expect(stage('hub').cmd.length).toBeGreaterThan(0);
    expect(stage('agent').cmd.length).toBeGreaterThan(0);
  });

  it('every entrypoint of the images and of deploy/kubernetes is built and copied into the image', () => {
    expect(manifestEntrypoints.length).toBeGreaterThan(0);
    const wanted = [
      ...['hub', 'agent'].map((name) => ({ stage: stage(name), file: stage(name).cmd[1]! })),
      // The manifests run the default image (the last stage is `FROM hub`).
      ...manifestEntrypoints.map((file) => ({ stage: stage('hub'), file })),
    ];
    for (const { stage: s, file } of wanted) {
      const source = fromBuild(s, file);
      expect(source, `${s.name} image: ${file} comes from the build stage`).toBeDefined();
      expect(existsSync(join(REPO_ROOT, source!)), `${source} is produced by the build`).toBe(true);
    }
  });

  it('the agent image holds everything its entrypoint loads: it starts from those files alone', async () => {
    const agent = stage('agent');
    const root = join(work, 'agent-image');
    for (const c of agent.copiesFromBuild) {
      const source = join(REPO_ROOT, c.from.replace(/^\/src\/?/, ''));
      cpSync(source, join(root, c.to.replace(/^\/app\/?/, '')), { recursive: true, dereference: true });
    }
    // Wrong settings on purpose: loading the bundle (every static import) must work, and the agent
    // then names each wrong variable and exits 2 — it has no node_modules but what the stage copied.
    const [node, entry] = agent.cmd;
    expect(node).toBe('node');
    const r = await run(process.execPath, [join(root, entry!)], {
      PATH: process.env['PATH'] ?? '',
      FLOTILLA_HUB_URL: 'not a url',
    });
    expect(r.stderr).toContain('FLOTILLA_HUB_URL: must be an http(s) URL');
    expect(r.code).toBe(2);
  });
});
