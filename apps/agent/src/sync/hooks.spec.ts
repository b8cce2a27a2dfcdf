import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type KubeObject } from '@flotilla/contract';
import { HookAnnotationError, type SyncRole, syncRoleOf } from './hooks.js';

interface RoleCase {
  case: string;
  annotations: Record<string, string>;
  role?: SyncRole;
  error?: string;
}

const cases = parse(
  readFileSync(new URL('../testdata/hook-roles.yaml', import.meta.url), 'utf8'),
) as RoleCase[];

const job = (annotations: Record<string, string>): KubeObject => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name: 'migrate', annotations },
});

describe('syncRoleOf', () => {
  it.each(cases.filter((c) => c.role).map((c) => [c.case, c] as const))('%s', (_, c) => {
    expect(syncRoleOf(job(c.annotations))).toEqual(c.role);
  });

  it.each(cases.filter((c) => c.error).map((c) => [c.case, c] as const))('%s', (_, c) => {
    let caught: unknown;
    try {
      syncRoleOf(job(c.annotations));
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(HookAnnotationError);
    expect((caught as HookAnnotationError).message).toBe(c.error);
  });
});
