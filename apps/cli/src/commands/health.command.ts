import { readdirSync, readFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { createHealthAssessor, type HealthResult } from '@flotilla/health';
import {
  many,
  parseCommandArgs,
  readOneDocument,
  runOffline,
  UsageError,
  type ParsedCommandArgs,
} from '../offline/offline-command.js';

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
 * Reads every `health.lua` of a `resource_customizations`-style directory. Keys are the directory path relative
 * to DIR with `/` separators: `<group>/<kind>`, or `<Kind>` for core kinds.
 */
export function readLuaDir(dir: string): Map<string, string> {
  let entries: string[];
  try {
    entries = readdirSync(dir, { recursive: true, encoding: 'utf8' });
  } catch (err) {
    throw new UsageError(
      `cannot read --lua-dir ${dir}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
  const scripts = new Map<string, string>();
  for (const entry of entries.sort()) {
    const parts = entry.split(sep);
    if (parts.at(-1) !== 'health.lua' || parts.length < 2 || parts.length > 3) continue;
    try {
      scripts.set(parts.slice(0, -1).join('/'), readFileSync(join(dir, entry), 'utf8'));
    } catch (err) {
      throw new UsageError(
        `cannot read ${join(dir, entry)}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      );
    }
  }
  return scripts;
}

function readObject(path: string): Record<string, unknown> {
  const doc = readOneDocument(path);
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new UsageError(`${path}: expected one Kubernetes object (a mapping with apiVersion and kind)`);
  }
  return doc as Record<string, unknown>;
}

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE);
    return 0;
  }
  let args: ParsedCommandArgs | undefined;
  return runOffline(
    () => {
      args = parseCommandArgs(argv, OPTIONS);
      return args.output;
    },
    async () => {
      const values = args?.values ?? {};
      const files = many(values['file']);
      if (files.length === 0) throw new UsageError(`health needs at least one -f OBJECT\n${USAGE}`);
      const luaDir = values['lua-dir'];
      // Read everything first: unreadable input is a usage error before any evaluation.
      const objects = files.map(readObject);
      const assessor = await createHealthAssessor({
        luaScripts: typeof luaDir === 'string' ? readLuaDir(luaDir) : undefined,
      });
      try {
        const results: Verdict[] = objects.map(
          (obj) => assessor.assess(obj) ?? { status: null, message: '' },
        );
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
    },
  );
}
