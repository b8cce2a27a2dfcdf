import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  checkHealthRules,
  HEALTH_RULE_FILE,
  type CheckedHealthRule,
  type HealthRuleFile,
} from '@flotilla/health';
import { HubConfigError } from '../config/hub-config.js';

const VARIABLE = 'FLOTILLA_HEALTH_LUA_DIR';
/** A rule sits two levels down at most (`<group>/<kind>/health.lua`); one more finds misplaced ones. */
const MAX_DEPTH = 4;

/**
 * The hub's own health rules: every `health.lua` of FLOTILLA_HEALTH_LUA_DIR, checked as a fleet
 * repository's are (place, size, compiles). Any problem is a HubConfigError naming each file, so the
 * hub refuses to start rather than serve agents a set that silently lacks a rule.
 */
export async function loadHubHealthRules(dir: string): Promise<CheckedHealthRule[]> {
  const files: HealthRuleFile[] = [];
  await collect(dir, '', 1, files);
  const { rules, problems } = await checkHealthRules(files);
  if (problems.length > 0)
    throw new HubConfigError(
      problems.map((p) => ({
        variable: VARIABLE,
        message: `${p.file}${p.line === undefined ? '' : `:${p.line}`}: ${p.message}`,
      })),
    );
  return rules;
}

async function collect(dir: string, prefix: string, depth: number, out: HealthRuleFile[]): Promise<void> {
  let names: string[];
  try {
    names = (await readdir(join(dir, prefix))).sort();
  } catch (e) {
    throw new HubConfigError([
      {
        variable: VARIABLE,
        message: `cannot read ${join(dir, prefix)}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`,
      },
    ]);
  }
  for (const name of names) {
    // Hidden entries are skipped: a mounted ConfigMap's `..data` links, editors' files.
    if (name.startsWith('.')) continue;
    const relativePath = prefix === '' ? name : `${prefix}/${name}`;
    const file = join(dir, relativePath);
    // stat, not lstat: a linked checkout of Argo CD's resource_customizations counts as what it points to.
    const info = await stat(file).catch(() => undefined);
    if (info?.isDirectory() && depth < MAX_DEPTH) await collect(dir, relativePath, depth + 1, out);
    else if (info?.isFile() && name === HEALTH_RULE_FILE)
      out.push({ file, relativePath, content: await readFile(file, 'utf8') });
  }
}
