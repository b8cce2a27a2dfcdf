import { type CommandDescription } from '../command.js';
import { describeOffline } from '../offline/offline-command.js';
import { lstatSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import {
  generate,
  parseApplicationSet,
  type ClusterInfo,
  type GenerateContext,
  type RepositoryFiles,
} from '@flotilla/generators';
import {
  errorResult,
  many,
  readDocuments,
  readOneDocument,
  offlineCommand,
  UsageError,
} from '../offline/offline-command.js';

const USAGE = `usage: flotilla generate -f APPSET [-f APPSET]... [--clusters FILE] [--repo URL=DIR]... [-o json|yaml|table]

Runs an ApplicationSet's generators (Argo CD semantics) and prints
{"params": [{...}, ...], "targets": [{metadata, spec}, ...]}: the parameter sets in
generator order and the Application rendered for each.

  -f, --file APPSET   an ApplicationSet (argoproj.io/v1alpha1 or flotilla.dev/v1alpha1),
                      YAML or JSON; repeatable (the output is then a JSON array)
  --clusters FILE     the cluster inventory: [{name, server, labels: {}, annotations: {}}]
  --repo URL=DIR      a local checkout of the revision a git generator asks for; repeatable
  -o, --output        json, yaml or table (default)

Targets that end up with the same name are all shown (the hub refuses them).`;

const OPTIONS = {
  file: { type: 'string', short: 'f', multiple: true },
  clusters: { type: 'string' },
  repo: { type: 'string', multiple: true },
} as const;

/** Repository URLs compare as Argo CD normalises them: no trailing slash or `.git`, case-insensitive. */
export function normalizeRepoURL(url: string): string {
  return url
    .trim()
    .replace(/\/+$/, '')
    .replace(/\.git$/, '')
    .toLowerCase();
}

export function readClusters(path: string | undefined): ClusterInfo[] {
  if (path === undefined) return [];
  const docs = readDocuments(path);
  if (docs.length > 1)
    throw new UsageError(`${path}: expected one YAML list of clusters, found ${docs.length} documents`);
  const list = docs[0] ?? [];
  if (!Array.isArray(list)) throw new UsageError(`${path}: expected a list of clusters`);
  return list.map((item: unknown, i): ClusterInfo => {
    const at = `${path}: [${i}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item))
      throw new UsageError(`${at} is not an object`);
    const c = item as Record<string, unknown>;
    if (typeof c['name'] !== 'string') throw new UsageError(`${at}.name must be a string`);
    if (typeof c['server'] !== 'string') throw new UsageError(`${at}.server must be a string`);
    const cluster: ClusterInfo = {
      name: c['name'],
      server: c['server'],
      labels: stringMap(c['labels'], `${at}.labels`),
      annotations: stringMap(c['annotations'], `${at}.annotations`),
    };
    if (typeof c['project'] === 'string') cluster.project = c['project'];
    return cluster;
  });
}

function stringMap(value: unknown, at: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw new UsageError(`${at} must be a map of strings`);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw new UsageError(`${at}.${k} must be a string`);
    out[k] = v;
  }
  return out;
}

export function parseRepos(specs: string[]): Map<string, string> {
  const repos = new Map<string, string>();
  for (const spec of specs) {
    const eq = spec.lastIndexOf('=');
    if (eq <= 0 || eq === spec.length - 1) throw new UsageError(`--repo '${spec}' is not URL=DIR`);
    const url = spec.slice(0, eq);
    const dir = resolve(spec.slice(eq + 1));
    let ok: boolean;
    try {
      ok = statSync(dir).isDirectory();
    } catch {
      ok = false;
    }
    if (!ok) throw new UsageError(`--repo ${url}: ${dir} is not a readable directory`);
    repos.set(normalizeRepoURL(url), dir);
  }
  return repos;
}

/**
 * The files of a checkout on disk. Symbolic links are neither listed nor followed, `.git` is not
 * part of the revision, and a path that would leave the directory is refused.
 */
export function directoryRepository(root: string): RepositoryFiles {
  const realRoot = realpathSync(root);
  let listing: { files: string[]; dirs: string[] } | undefined;
  const list = (): { files: string[]; dirs: string[] } => {
    if (listing) return listing;
    const files: string[] = [];
    const dirs: string[] = [];
    const walk = (dir: string, prefix: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        if (entry.isSymbolicLink()) continue;
        const rel = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
        if (entry.isDirectory()) {
          if (prefix === '' && entry.name === '.git') continue;
          dirs.push(rel);
          walk(join(dir, entry.name), rel);
        } else if (entry.isFile()) files.push(rel);
      }
    };
    walk(realRoot, '');
    listing = { files: files.sort(), dirs: dirs.sort() };
    return listing;
  };
  return {
    listFiles: () => list().files,
    // A checkout on disk may hold empty directories, which the git directory generator must see.
    listDirectories: () => list().dirs,
    readFile(path: string) {
      if (isAbsolute(path) || path.split('/').some((s) => s === '..')) {
        throw new Error(`refusing to read '${path}' outside the repository`);
      }
      const full = join(realRoot, ...path.split('/'));
      const rel = relative(realRoot, full);
      if (rel.startsWith(`..${sep}`) || rel === '..')
        throw new Error(`refusing to read '${path}' outside the repository`);
      // Refuse a symlink anywhere on the way, not only at the end.
      let cur = realRoot;
      for (const segment of path.split('/')) {
        cur = join(cur, segment);
        if (lstatSync(cur).isSymbolicLink())
          throw new Error(`refusing to follow the symbolic link '${path}'`);
      }
      return readFileSync(full, 'utf8');
    },
  };
}

export function contextFor(clusters: ClusterInfo[], repos: Map<string, string>): GenerateContext {
  const opened = new Map<string, RepositoryFiles>();
  return {
    clusters,
    repository(repoURL: string) {
      const key = normalizeRepoURL(repoURL);
      const dir = repos.get(key);
      if (dir === undefined) throw new Error(`no --repo ${repoURL}=DIR was given`);
      let repo = opened.get(key);
      if (!repo) {
        repo = directoryRepository(dir);
        opened.set(key, repo);
      }
      return repo;
    },
  };
}

interface GenerateOutput {
  params: Record<string, unknown>[];
  targets: unknown[];
}

const text = (v: unknown): string => (typeof v === 'string' ? v : '');

function table(r: unknown): string {
  const { targets } = r as GenerateOutput;
  if (targets.length === 0) return '(no targets)';
  return (targets as { metadata: { name: string }; spec: Record<string, unknown> }[])
    .map((t) => {
      const dest = (t.spec['destination'] ?? {}) as Record<string, unknown>;
      const source = (t.spec['source'] ?? {}) as Record<string, unknown>;
      const where = text(dest['name']) || text(dest['server']) || '-';
      return `${t.metadata.name}\t${where}/${text(dest['namespace'])}\t${text(source['path'])}`;
    })
    .join('\n');
}

export const run = offlineCommand('generate', USAGE, OPTIONS, (values) => {
  const files = many(values['file']);
  if (files.length === 0) throw new UsageError(`generate needs at least one -f APPSET\n${USAGE}`);
  const clustersFile = values['clusters'];
  const clusters = readClusters(typeof clustersFile === 'string' ? clustersFile : undefined);
  const ctx = contextFor(clusters, parseRepos(many(values['repo'])));
  // Read every file first: an unreadable one is a usage error (exit 2) whatever its position.
  // Repeated keys keep the last value, as kubectl (sigs.k8s.io/yaml) reads an ApplicationSet.
  const docs = files.map((f) => readOneDocument(f, { uniqueKeys: false }));
  const results = docs.map((doc): GenerateOutput | { error: string } => {
    try {
      const result = generate(parseApplicationSet(doc), ctx);
      return { params: result.params, targets: result.targets.map((t) => t.application) };
    } catch (err) {
      return errorResult(err);
    }
  });
  return { results, batch: results.length > 1, table };
});

export const describe: CommandDescription = describeOffline(OPTIONS);
