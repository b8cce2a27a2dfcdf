import { type CommandDescription } from '../command.js';
import { describeOffline } from '../offline/offline-command.js';
import { type Dirent, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createHealthAssessor, type HealthResult } from '@flotilla/health';
import { many, readOneDocument, offlineCommand, UsageError } from '../offline/offline-command.js';

const USAGE = `usage: flotilla health -f OBJECT [-f OBJECT]... [--lua-dir DIR] [-o json|yaml|table]

Assesses the health of Kubernetes objects with Argo CD's rules and prints
{"status": S, "message": M} per object (S is null when no rule knows the kind).

  -f, --file OBJECT   a YAML or JSON file holding one object; repeat for a batch (JSON array out)
  --lua-dir DIR       custom Lua rules in Argo CD's layout: DIR/<group>/<kind>/health.lua
                      (DIR/<Kind>/health.lua for core kinds; a directory named _ is a wildcard)
  -o, --output        json, yaml or table (default)`;

const OPTIONS = {
  file: { type: 'string', short: 'f', multiple: true },
  'lua-dir': { type: 'string' },
} as const;

type Verdict = { status: HealthResult['status'] | null; message: string };

/**
 * Reads every `health.lua` of a `resource_customizations`-style directory: `DIR/<group>/<kind>/health.lua`, or
 * `DIR/<Kind>/health.lua` for core kinds. Keys are those directory paths with `/`. Only two levels are listed,
 * so the test data beside Argo CD's scripts costs nothing.
 */
export function readLuaDir(dir: string): Map<string, string> {
  const scripts = new Map<string, string>();
  const read = (path: string, key: string) => {
    try {
      scripts.set(key, readFileSync(path, 'utf8'));
    } catch (err) {
      throw new UsageError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  };
  for (const first of listDirs(dir, true)) {
    const firstPath = join(dir, first);
    const entries = listEntries(firstPath);
    if (entries.files.includes('health.lua')) read(join(firstPath, 'health.lua'), first);
    for (const second of entries.dirs) {
      const secondPath = join(firstPath, second);
      if (listEntries(secondPath).files.includes('health.lua')) {
        read(join(secondPath, 'health.lua'), `${first}/${second}`);
      }
    }
  }
  return scripts;
}

function listEntries(dir: string, required = false): { dirs: string[]; files: string[] } {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    if (!required) return { dirs: [], files: [] };
    throw new UsageError(
      `cannot read --lua-dir ${dir}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
  // Symbolic links count as what they point to, so a linked checkout of resource_customizations works.
  const kind = (e: Dirent): 'dir' | 'file' | 'other' => {
    if (e.isDirectory()) return 'dir';
    if (e.isFile()) return 'file';
    if (!e.isSymbolicLink()) return 'other';
    try {
      const target = statSync(join(dir, e.name));
      return target.isDirectory() ? 'dir' : target.isFile() ? 'file' : 'other';
    } catch {
      return 'other';
    }
  };
  return {
    dirs: entries
      .filter((e) => kind(e) === 'dir')
      .map((e) => e.name)
      .sort(),
    files: entries.filter((e) => kind(e) === 'file').map((e) => e.name),
  };
}

function listDirs(dir: string, required: boolean): string[] {
  return listEntries(dir, required).dirs;
}

function readObject(path: string): Record<string, unknown> {
  // Duplicate keys are accepted (last wins) as Argo CD's YAML reader accepts them.
  const doc = readOneDocument(path, { uniqueKeys: false });
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new UsageError(`${path}: expected one Kubernetes object (a mapping with apiVersion and kind)`);
  }
  return doc as Record<string, unknown>;
}

export const run = offlineCommand('health', USAGE, OPTIONS, async (values) => {
  const files = many(values['file']);
  if (files.length === 0) throw new UsageError(`health needs at least one -f OBJECT\n${USAGE}`);
  const luaDir = values['lua-dir'];
  // Read everything first: unreadable input is a usage error before any evaluation.
  const objects = files.map(readObject);
  const assessor = await createHealthAssessor({
    luaScripts: typeof luaDir === 'string' ? readLuaDir(luaDir) : undefined,
  });
  try {
    const results: Verdict[] = objects.map((obj) => assessor.assess(obj) ?? { status: null, message: '' });
    return {
      results,
      batch: files.length > 1,
      table: (r) => {
        const verdict = r as Verdict;
        return `${verdict.status ?? '-'}${verdict.message ? `  ${verdict.message}` : ''}`;
      },
    };
  } finally {
    assessor.close();
  }
});

export const describe: CommandDescription = describeOffline(OPTIONS);
