/** The one file of a `resource_customizations` directory that Flotilla reads; actions and tests are left alone. */
export const HEALTH_RULE_FILE = 'health.lua';
/**
 * The largest health script accepted. Argo CD's biggest bundled check is under 10 KiB; a script that
 * travels to every agent in every assignments answer should not be a place to ship data.
 */
export const HEALTH_RULE_MAX_BYTES = 64 * 1024;
/** The most rules one set may hold (Argo CD's whole public library is a few hundred). */
export const HEALTH_RULES_MAX = 1000;

/** A `health.lua` as read from a directory in Argo CD's `resource_customizations` layout. */
export interface HealthRuleFile {
  /** Where the file is, as the person who wrote it knows it (named in every problem). */
  file: string;
  /** Its path inside the rules directory: `<group>/<kind>/health.lua` or `<Kind>/health.lua`. */
  relativePath: string;
  content: string;
}

/** A health script that passed every check: its key (`<group>/<kind>`, `_` wildcards) and source. */
export interface CheckedHealthRule {
  key: string;
  file: string;
  script: string;
}

export type HealthRuleProblemCode = 'invalid-path' | 'invalid-lua' | 'too-large';

export interface HealthRuleProblem {
  code: HealthRuleProblemCode;
  file: string;
  /** The line the Lua compiler points at (invalid-lua). */
  line?: number;
  message: string;
}

// API groups are DNS subdomains (lowercase); `_` is Argo CD's wildcard inside a directory name.
const GROUP = /^[a-z0-9_]([-a-z0-9_.]*[a-z0-9_])?$/;
const KIND = /^[A-Za-z0-9_]+$/;

/**
 * The rule key of a path inside a rules directory, or why it is not one. Only the two layouts Argo
 * CD reads are keys: `<group>/<kind>/health.lua`, and `<Kind>/health.lua` for the core group.
 */
export function healthRuleKeyOf(relativePath: string): { key: string } | { problem: string } {
  const parts = relativePath.split('/');
  const expected = `expected <group>/<kind>/${HEALTH_RULE_FILE} (or <Kind>/${HEALTH_RULE_FILE} for a core kind)`;
  if (parts.at(-1) !== HEALTH_RULE_FILE || parts.length < 2 || parts.length > 3)
    return { problem: `'${relativePath}' is not a health rule's place: ${expected}` };
  const kind = parts.at(-2) ?? '';
  const group = parts.length === 3 ? (parts[0] ?? '') : null;
  if (group !== null && (group.length > 253 || !GROUP.test(group)))
    return {
      problem: `'${group}' is not an API group (lowercase letters, digits, '-', '.', '_' as a wildcard): ${expected}`,
    };
  if (kind.length > 63 || !KIND.test(kind))
    return { problem: `'${kind}' is not a kind (letters and digits, '_' as a wildcard): ${expected}` };
  return { key: group === null ? kind : `${group}/${kind}` };
}

/**
 * Checks health scripts without running them: each must sit at a rule's place, stay under
 * HEALTH_RULE_MAX_BYTES and compile as Lua (a syntax check; no object is ever assessed here).
 * The rules that pass come back sorted by key; every problem names its file.
 */
export async function checkHealthRules(files: readonly HealthRuleFile[]): Promise<{
  rules: CheckedHealthRule[];
  problems: HealthRuleProblem[];
}> {
  const problems: HealthRuleProblem[] = [];
  const candidates: CheckedHealthRule[] = [];
  const seen = new Map<string, string>();
  for (const f of files) {
    const place = healthRuleKeyOf(f.relativePath);
    if ('problem' in place) {
      problems.push({ code: 'invalid-path', file: f.file, message: place.problem });
      continue;
    }
    const bytes = new TextEncoder().encode(f.content).length;
    if (bytes > HEALTH_RULE_MAX_BYTES) {
      problems.push({
        code: 'too-large',
        file: f.file,
        message: `${bytes} bytes; a health script may hold at most ${HEALTH_RULE_MAX_BYTES}`,
      });
      continue;
    }
    const first = seen.get(place.key);
    if (first !== undefined) {
      problems.push({
        code: 'invalid-path',
        file: f.file,
        message: `the rule for ${place.key} is already defined by ${first}`,
      });
      continue;
    }
    seen.set(place.key, f.file);
    candidates.push({ key: place.key, file: f.file, script: f.content });
  }
  if (candidates.length > HEALTH_RULES_MAX) {
    problems.push({
      code: 'too-large',
      file: candidates[HEALTH_RULES_MAX]?.file ?? '',
      message: `${candidates.length} health rules; at most ${HEALTH_RULES_MAX} are accepted`,
    });
    return { rules: [], problems };
  }
  // Compiled under the name agents give it: Lua cuts chunk names at 60 characters, file paths run longer.
  const syntax = await luaSyntaxErrors(
    candidates.map((c) => ({ name: `${c.key}/${HEALTH_RULE_FILE}`, source: c.script })),
  );
  const rules: CheckedHealthRule[] = [];
  for (const c of candidates) {
    const error = syntax.get(`${c.key}/${HEALTH_RULE_FILE}`);
    if (error === undefined) {
      rules.push(c);
      continue;
    }
    // `name:12: unexpected symbol near 'x'`: the line apart, the file is named by `file`.
    const at = /^[^:]*:(\d+): (.*)$/s.exec(error);
    problems.push(
      at
        ? { code: 'invalid-lua', file: c.file, line: Number(at[1]), message: at[2] ?? '' }
        : { code: 'invalid-lua', file: c.file, message: error },
    );
  }
  rules.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { rules, problems };
}

/** Compiles each script (never runs it) in one short-lived VM: name → the compiler's message. */
async function luaSyntaxErrors(scripts: readonly { name: string; source: string }[]) {
  const errors = new Map<string, string>();
  if (scripts.length === 0) return errors;
  const { LuaRuntime } = await import('./lua-runtime.js');
  const runtime = await LuaRuntime.create();
  try {
    for (const s of scripts) {
      const compiled = runtime.compile(s.name, s.source);
      if ('error' in compiled) errors.set(s.name, compiled.error);
    }
  } finally {
    runtime.close();
  }
  return errors;
}
