import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  type OptionTable,
  RESOURCE_COMPARE_OPTIONS,
  RESOURCE_SYNC_OPTIONS,
  TARGET_SYNC_OPTIONS,
} from './sync-options.js';

const page = readFileSync(new URL('../../../docs/sync-options.md', import.meta.url), 'utf8');

/** The rows of the table under `heading`: option as written → `honoured` or `refused`. */
function documented(heading: string): Map<string, string> {
  const start = page.indexOf(heading);
  expect(start, heading).toBeGreaterThan(-1);
  const section = page.slice(start).split('\n### ')[0] ?? '';
  const rows = new Map<string, string>();
  for (const m of section.matchAll(/^\| `([^`]+)` +\| (honoured|\*\*refused\*\*) +\|/gm))
    rows.set(m[1] as string, (m[2] as string).replaceAll('*', ''));
  return rows;
}

function expected(table: OptionTable): Map<string, string> {
  const rows = new Map<string, string>();
  for (const [key, values] of Object.entries(table))
    for (const [value, rule] of Object.entries(values))
      rows.set(value ? `${key}=${value}` : key, 'honoured' in rule ? 'honoured' : 'refused');
  return rows;
}

describe('docs/sync-options.md', () => {
  it.each([
    ['### Per target', TARGET_SYNC_OPTIONS],
    ['### Per object: `argocd.argoproj.io/sync-options`', RESOURCE_SYNC_OPTIONS],
    ['### Per object: `argocd.argoproj.io/compare-options`', RESOURCE_COMPARE_OPTIONS],
  ])('%s lists every option as the contract treats it', (heading, table) => {
    expect(documented(heading)).toEqual(expected(table));
  });
});
