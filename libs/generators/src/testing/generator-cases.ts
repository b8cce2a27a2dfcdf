import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { type ClusterInfo, type GenerateContext, type RepositoryFiles } from '../types.js';

/** One table-driven case of `testdata/cases/*.yaml`. */
export interface GeneratorCase {
  name: string;
  appset: unknown;
  clusters?: ClusterInfo[];
  /** repoURL → file path → content. */
  repos?: Record<string, Record<string, string>>;
  /** repoURL → every directory, for repositories that list them (checkouts on disk). */
  directories?: Record<string, string[]>;
  /** Expected parameter sets, exactly. */
  params?: unknown[];
  /** Expected target names, in order. */
  names?: string[];
  /** Expected rendered Applications (compared exactly), in order. */
  applications?: unknown[];
  /** Expected error: its code, a substring of its message, and its path. */
  error?: { code: string; message?: string; path?: string };
}

export function loadCases(dir: string): { file: string; cases: GeneratorCase[] }[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((file) => ({ file, cases: parse(readFileSync(join(dir, file), 'utf8')) as GeneratorCase[] }));
}

/** An in-memory repository per URL; asks for an unknown URL fail like a missing checkout would. */
export function contextFor(c: GeneratorCase): GenerateContext {
  const repos = c.repos ?? {};
  return {
    clusters: c.clusters ?? [],
    repository(repoURL: string): RepositoryFiles {
      const files = repos[repoURL];
      if (!files) throw new Error(`no repository ${repoURL}`);
      const dirs = c.directories?.[repoURL];
      return {
        ...(dirs && { listDirectories: () => dirs }),
        listFiles: () => Object.keys(files).sort(),
        readFile: (path: string) => {
          const content = files[path];
          if (content === undefined) throw new Error(`no file ${path}`);
          return content;
        },
      };
    },
  };
}
