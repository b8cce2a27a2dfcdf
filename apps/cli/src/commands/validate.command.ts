import { type CommandDescription } from '../command.js';
import { readdirSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { parseOptions } from '../options/parse-options.js';
import {
  compareFleetErrors,
  formatFleetError,
  isFleetFile,
  isHealthRuleFile,
  validateFleetDirectory,
  validateFleetHealthRules,
  type FleetError,
  type FleetFile,
  type FleetHealthRule,
  type FleetValidation,
} from '@flotilla/fleet-config';
import { stringify } from 'yaml';
import { UsageError, type OutputFormat } from '../offline/offline-command.js';

const USAGE = `usage: flotilla validate DIR [-o json|yaml|table]

Checks a fleet repository offline: every YAML file under DIR (hidden directories
skipped), each document against its kind (ApplicationSet, SyncWindow, Project,
RolloutStrategy, ClusterGroup, and Kubernetes' ValidatingAdmissionPolicy and
ValidatingAdmissionPolicyBinding with every CEL expression compiled, plus the
objects a policy's paramKind names), then the references between objects, cron and
time-zone validity, label selectors, and project repositories; and the health
rules under resource_customizations/ (<group>/<kind>/health.lua, as in Argo CD):
each at a rule's place, at most 64 KiB, compiling as Lua (never run). A
repository with any invalid object is invalid as a whole. Symbolic links are
refused.

  -o, --output   json, yaml or table (default: one line per error,
                 file:line: kind/name: path: message, then a summary)

Exit 0 when valid, 1 when invalid (the report is still printed), 2 on usage
or when DIR cannot be read. File paths are relative to DIR.`;

/** The JSON report: a public interface for CI steps, extend it, never break it. */
export interface ValidateReport {
  valid: boolean;
  objects: { kind: string; name: string; file: string }[];
  errors: {
    file: string;
    document: number;
    line: number;
    kind: string | null;
    name: string | null;
    path: string;
    message: string;
    code: string;
    /** A YAML syntax error's offending line with a caret under the column. */
    excerpt?: string;
  }[];
}

export async function run(argv: string[]): Promise<number> {
  try {
    return await execute(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`flotilla: ${err.withExcerpt}`);
      return 2;
    }
    throw err instanceof Error ? err : new Error(String(err));
  }
}

async function execute(argv: string[]): Promise<number> {
  const { dir, output } = parseValidateArgs(argv);
  if (dir === null) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const { files, refused } = readFleetDirectory(dir);
  const rules = await validateFleetHealthRules(files);
  const report = toReport(validateFleetDirectory(files), rules, refused);
  process.stdout.write(render(report, output, files.length));
  return report.valid ? 0 : 1;
}

const OPTIONS = {
  output: { type: 'string', short: 'o', default: 'table' },
  help: { type: 'boolean', short: 'h' },
} as const;

export const describe: CommandDescription = { options: OPTIONS };

function parseValidateArgs(argv: string[]): { dir: string | null; output: OutputFormat } {
  let parsed;
  try {
    parsed = parseOptions(argv, OPTIONS, { command: 'validate', allowPositionals: true });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n${USAGE}`);
  }
  const { values, positionals } = parsed;
  if (values.help === true) return { dir: null, output: 'table' };
  const output = values.output;
  if (output !== 'json' && output !== 'yaml' && output !== 'table')
    throw new UsageError(`-o must be json, yaml or table, not '${output}'`);
  if (positionals.length !== 1)
    throw new UsageError(
      positionals.length === 0
        ? `validate needs a directory\n${USAGE}`
        : `validate takes one directory, got ${positionals.length}: ${positionals.join(' ')}`,
    );
  return { dir: positionals[0] as string, output };
}

/**
 * Reads the YAML files and health rules under `dir` as the hub reads a checkout: hidden entries skipped, symbolic
 * links never followed (they are reported, since a link can point outside the repository), and
 * every path kept relative to the root.
 */
export function readFleetDirectory(dir: string): { files: FleetFile[]; refused: FleetError[] } {
  let root: string;
  try {
    root = realpathSync(resolve(dir));
    if (!statSync(root).isDirectory()) throw new UsageError(`${dir} is not a directory`);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(
      `cannot read ${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  const files: FleetFile[] = [];
  const refused: FleetError[] = [];
  const walk = (abs: string): void => {
    let entries;
    try {
      entries = readdirSync(abs, { withFileTypes: true });
    } catch (err) {
      throw new UsageError(
        `cannot read ${abs}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (entry.name.startsWith('.')) continue;
      const full = join(abs, entry.name);
      const path = relative(root, full).split(sep).join('/');
      if (path.startsWith('..')) throw new UsageError(`${full} is outside ${dir}`);
      if (entry.isSymbolicLink()) {
        if (isFleetFile(path) || isHealthRuleFile(path) || isDirectory(full))
          refused.push(symlinkError(path, full));
      } else if (entry.isDirectory()) {
        walk(full);
      } else if (entry.isFile() && (isFleetFile(path) || isHealthRuleFile(path))) {
        try {
          files.push({ path, content: readFileSync(full, 'utf8') });
        } catch (err) {
          throw new UsageError(
            `cannot read ${full}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
          );
        }
      }
    }
  };
  walk(root);
  return { files, refused };
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function symlinkError(path: string, full: string): FleetError {
  let target = '';
  try {
    target = ` (-> ${readlinkSync(full)})`;
  } catch {
    // The link vanished while reading: it is refused all the same.
  }
  return {
    code: 'invalid-path',
    file: path,
    document: 0,
    line: 1,
    kind: null,
    name: null,
    path: '(root)',
    message: `symbolic link refused${target}: a fleet repository holds its files itself, a link may point outside it`,
  };
}

function toReport(
  result: FleetValidation,
  rules: { rules: FleetHealthRule[]; errors: FleetError[] },
  refused: FleetError[],
): ValidateReport {
  const errors = [...refused, ...result.errors, ...rules.errors].sort(compareFleetErrors);
  return {
    valid: errors.length === 0,
    // Kubernetes' admission policies and their params, and the health rules, are valid objects of
    // the repository too.
    objects: [
      ...[
        ...result.objects,
        ...result.policies,
        ...result.params.map((o) => ({ ...o, kind: String(o.object.kind) })),
      ]
        .sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.document - b.document))
        .map((o) => ({ kind: o.kind, name: o.name, file: o.file })),
      ...rules.rules.map((r) => ({ kind: 'HealthRule', name: r.key, file: r.file })),
    ],
    errors: errors.map((e) => ({
      file: e.file,
      document: e.document,
      line: e.line,
      kind: e.kind,
      name: e.name,
      path: e.path,
      message: e.message,
      code: e.code,
      ...(e.excerpt !== undefined && { excerpt: e.excerpt }),
    })),
  };
}

function render(report: ValidateReport, output: OutputFormat, fileCount: number): string {
  switch (output) {
    case 'json':
      return `${JSON.stringify(report)}\n`;
    case 'yaml':
      return stringify(report);
    case 'table': {
      // A syntax error shows its line with a caret under it, indented below the error.
      const lines = report.errors.map((e) => {
        const line = formatFleetError({ ...e, code: e.code as FleetError['code'] });
        return e.excerpt ? `${line}\n${e.excerpt.replace(/^/gm, '    ')}` : line;
      });
      const files = `${fileCount} file${fileCount === 1 ? '' : 's'}`;
      const objects = `${report.objects.length} valid object${report.objects.length === 1 ? '' : 's'}`;
      lines.push(
        report.valid
          ? `valid: ${objects} in ${files}${kindCounts(report)}`
          : `invalid: ${report.errors.length} error${report.errors.length === 1 ? '' : 's'} (${objects} in ${files}); nothing would change`,
      );
      return `${lines.join('\n')}\n`;
    }
  }
}

function kindCounts(report: ValidateReport): string {
  const counts = new Map<string, number>();
  for (const o of report.objects) counts.set(o.kind, (counts.get(o.kind) ?? 0) + 1);
  if (counts.size === 0) return '';
  const parts = [...counts.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, n]) => `${k} ${n}`);
  return ` (${parts.join(', ')})`;
}
