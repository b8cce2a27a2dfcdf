import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

/** A directory of table-driven cases: its sub-directories in name order, and their YAML files. */
export interface FixtureCases {
  /** The case names (sub-directories), sorted. */
  cases: string[];
  /** `file` of case `name`, parsed; undefined when the case has no such file. */
  load: (name: string, file: string) => unknown;
}

/** The cases under `root`, one directory each, as gitops-engine lays out its testdata. */
export function fixtureCases(root: string): FixtureCases {
  const cases = readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  const load = (name: string, file: string): unknown => {
    const path = join(root, name, file);
    return existsSync(path) ? (parse(readFileSync(path, 'utf8')) as unknown) : undefined;
  };
  return { cases, load };
}
