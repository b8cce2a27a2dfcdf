import { type GitGenerator } from '../application-set.js';
import { sanitizeName } from '../argo-functions.js';
import { GeneratorError } from '../generator-error.js';
import { pathMatch, pathspecMatch } from '../glob.js';
import { formatValue } from '@flotilla/gotemplate';
import { flatten, isPlainObject } from '../params.js';
import { type Params, type RepositoryFiles } from '../types.js';
import { parseYamlData } from '../yaml-data.js';
import { type GeneratorEnv } from './generator-env.js';
import { appendValues } from './values.js';

/**
 * The git generator over the files of one revision. `directories`: one set per directory matching
 * a path.Match glob and no `exclude: true` entry (hidden directories never match). `files`: one set
 * per object in each matching JSON/YAML file (a file holding a list gives one set per element).
 */
export function gitGenerator(spec: GitGenerator, env: GeneratorEnv, path: string): Params[] {
  let repo: RepositoryFiles;
  let files: string[];
  try {
    repo = env.ctx.repository(spec.repoURL, spec.revision);
    files = repo.listFiles();
  } catch (err) {
    throw new GeneratorError(
      'repository',
      `cannot read ${spec.repoURL} at revision ${spec.revision}: ${(err as Error).message}`,
      `${path}.repoURL`,
    );
  }
  if (spec.directories && spec.directories.length > 0) {
    let dirs: string[];
    try {
      dirs = repo.listDirectories ? visibleDirectories(repo.listDirectories()) : allDirectories(files);
    } catch (err) {
      throw new GeneratorError(
        'repository',
        `cannot list the directories of ${spec.repoURL}: ${(err as Error).message}`,
        `${path}.repoURL`,
      );
    }
    return directories(spec, dirs, env, path);
  }
  if (spec.files && spec.files.length > 0) return fileParams(spec, repo, files, env, path);
  throw new GeneratorError('invalid-appset', 'a git generator needs directories or files', path);
}

/** Compares paths segment by segment: the order filepath.Walk visits them in. */
function walkOrder(a: string, b: string): number {
  const sa = a.split('/');
  const sb = b.split('/');
  for (let i = 0; i < Math.min(sa.length, sb.length); i++) {
    const x = sa[i] ?? '';
    const y = sb[i] ?? '';
    if (x !== y) return x < y ? -1 : 1;
  }
  return sa.length - sb.length;
}

function allDirectories(files: string[]): string[] {
  const dirs = new Set<string>();
  for (const file of files) {
    const segments = file.split('/');
    for (let i = 1; i < segments.length; i++) {
      // The repo server skips hidden directories and everything below them.
      if ((segments[i - 1] ?? '').startsWith('.')) break;
      dirs.add(segments.slice(0, i).join('/'));
    }
  }
  return [...dirs].sort(walkOrder);
}

/** The repo server skips hidden directories and everything below them, and the root itself. */
function visibleDirectories(dirs: string[]): string[] {
  return dirs
    .map((d) => d.replace(/^\.\//, '').replace(/\/+$/, ''))
    .filter((d) => d !== '' && d !== '.' && !d.split('/').some((s) => s.startsWith('.')))
    .sort(walkOrder);
}

function directories(spec: GitGenerator, dirs: string[], env: GeneratorEnv, path: string): Params[] {
  const items = spec.directories ?? [];
  const selected = dirs.filter((dir) => {
    let include = false;
    for (const item of items) {
      if (!pathMatch(item.path, dir)) continue;
      if (item.exclude) return false;
      include = true;
    }
    return include;
  });
  return selected.map((dir) => {
    const params = pathParams(dir, undefined, spec.pathParamPrefix ?? '', env.goTemplate);
    appendValues(spec.values, params, env, `${path}.values`);
    return params;
  });
}

function fileParams(
  spec: GitGenerator,
  repo: RepositoryFiles,
  files: string[],
  env: GeneratorEnv,
  path: string,
): Params[] {
  const items = spec.files ?? [];
  const selected = files
    .filter((file) => {
      let include = false;
      for (const item of items) {
        if (!pathspecMatch(item.path, file)) continue;
        if (item.exclude) return false;
        include = true;
      }
      return include;
    })
    .sort();
  const out: Params[] = [];
  for (const file of selected) {
    for (const object of readObjects(repo, file, path)) {
      const params: Params = {};
      if (env.goTemplate) Object.assign(params, object);
      else for (const [k, v] of Object.entries(flatten(object))) params[k] = formatValue(v);
      Object.assign(
        params,
        pathParams(parentDir(file), file, spec.pathParamPrefix ?? '', env.goTemplate, params),
      );
      appendValues(spec.values, params, env, `${path}.values`);
      out.push(params);
    }
  }
  return out;
}

/** The objects a JSON/YAML file holds: an empty file counts as one empty object, a list as many. */
function readObjects(repo: RepositoryFiles, file: string, path: string): Record<string, unknown>[] {
  const fail = (why: string): GeneratorError =>
    new GeneratorError('file-parse', `unable to process file '${file}': unable to parse file: ${why}`, path);
  let data: unknown;
  try {
    data = parseYamlData(repo.readFile(file));
  } catch (err) {
    throw fail(`error converting YAML to JSON: yaml: ${(err as Error).message}`);
  }
  if (data === null || data === undefined) return [{}];
  if (isPlainObject(data)) return [data];
  if (Array.isArray(data) && data.every(isPlainObject)) return data;
  const kind = Array.isArray(data)
    ? 'array'
    : typeof data === 'number'
      ? 'number'
      : typeof data === 'boolean'
        ? 'bool'
        : 'string';
  throw fail(
    `error unmarshaling JSON: while decoding JSON: json: cannot unmarshal ${kind} into Go value of type map[string]interface {}`,
  );
}

function parentDir(file: string): string {
  const i = file.lastIndexOf('/');
  return i < 0 ? '.' : file.slice(0, i);
}

function basename(p: string): string {
  const i = p.lastIndexOf('/');
  return i < 0 ? p : p.slice(i + 1);
}

/**
 * Argo CD's path params: flat `path`, `path.basename`, `path.basenameNormalized`, `path[N]` (and
 * `path.filename*` for files), or nested `path.path`, `path.segments` with goTemplate; all under
 * `pathParamPrefix` when set.
 */
function pathParams(
  dir: string,
  file: string | undefined,
  prefix: string,
  goTemplate: boolean,
  into: Params = {},
): Params {
  const base = basename(dir);
  if (goTemplate) {
    const p: Record<string, unknown> = {
      path: dir,
      basename: base,
      basenameNormalized: sanitizeName(base),
    };
    if (file !== undefined) {
      p['filename'] = basename(file);
      p['filenameNormalized'] = sanitizeName(basename(file));
    }
    p['segments'] = dir.split('/');
    if (prefix) into[prefix] = { path: p };
    else into['path'] = p;
    return into;
  }
  const name = prefix ? `${prefix}.path` : 'path';
  into[name] = dir;
  into[`${name}.basename`] = base;
  if (file !== undefined) into[`${name}.filename`] = basename(file);
  into[`${name}.basenameNormalized`] = sanitizeName(base);
  if (file !== undefined) into[`${name}.filenameNormalized`] = sanitizeName(basename(file));
  dir.split('/').forEach((segment, i) => {
    if (segment !== '') into[`${name}[${i}]`] = segment;
  });
  return into;
}
