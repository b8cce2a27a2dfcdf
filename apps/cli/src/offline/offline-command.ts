import { readFileSync } from 'node:fs';
import { yamlErrorParts } from '@flotilla/fleet-config';
import { parseAllDocuments } from 'yaml';
import { parseOptions, type OptionSpecs } from '../options/parse-options.js';
import { type CommandDescription } from '../command.js';
import { OFFLINE_COMMON_OPTIONS } from '../options/common-options.js';
import { parseOutputFormat, printResult, type OutputFormat } from '../options/output-format.js';
import { UsageError } from '../usage-error.js';

/**
 * Shared plumbing for the offline commands of ../shared/CLI.md: argument parsing, input files,
 * output formats and exit codes (0 evaluated, 1 evaluation failed, 2 usage or unreadable input).
 */

export { UsageError, type OutputFormat };

/** The input was understood but evaluating it failed: exit 1, `{"error": …}` on stdout. */
export class EvaluationError extends Error {
  override readonly name = 'EvaluationError';
}

/** The offline commands' formats in the order their usage error names them (CLI.md: unchanged). */
const OFFLINE_FORMATS: readonly OutputFormat[] = ['json', 'yaml', 'table'];

type Options = OptionSpecs;

export type ArgValue = string | boolean | (string | boolean)[] | undefined;

export interface ParsedCommandArgs {
  values: Record<string, ArgValue>;
  output: OutputFormat;
}

export function parseCommandArgs(command: string, argv: string[], options: Options): ParsedCommandArgs {
  const { values } = parseOptions(
    argv,
    { ...options, ...OFFLINE_COMMON_OPTIONS },
    { command, allowPositionals: false },
  );
  return { values, output: parseOutputFormat(values['output'], OFFLINE_FORMATS) };
}

/** How input YAML is read; the defaults are strict. */
export interface ReadOptions {
  /**
   * Reject a mapping that repeats a key (default). `false` keeps the last value, as Kubernetes' own YAML reader
   * (sigs.k8s.io/yaml) does, for commands that must accept whatever a cluster would.
   */
  uniqueKeys?: boolean;
}

/** Reads a YAML or JSON file holding exactly one document. */
export function readOneDocument(path: string, options: ReadOptions = {}): unknown {
  const docs = readDocuments(path, options);
  if (docs.length !== 1) throw new UsageError(`${path}: expected one document, found ${docs.length}`);
  return docs[0];
}

/**
 * Reads a YAML or JSON file (JSON is YAML) holding any number of documents; empty documents are
 * skipped. `-` is standard input, for a rendered stream piped in.
 */
export function readDocuments(path: string, options: ReadOptions = {}): unknown[] {
  let text: string;
  try {
    text = readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (err) {
    throw new UsageError(
      `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  const docs = parseAllDocuments(text, { prettyErrors: true, uniqueKeys: options.uniqueKeys ?? true });
  const out: unknown[] = [];
  for (const doc of Array.isArray(docs) ? docs : [docs]) {
    const first = doc.errors[0];
    if (first) {
      const { message, line, excerpt } = yamlErrorParts(first);
      throw new UsageError(`${path}${line ? `:${line}` : ''}: invalid YAML: ${message}`, excerpt);
    }
    const value: unknown = doc.toJS({ maxAliasCount: 100 });
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}

/** Option values that may be repeated (`-f a -f b`) arrive as arrays; this normalises them. */
export function many(value: ArgValue): string[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).map(String);
}

/**
 * Runs a command body and turns its outcome into output and an exit code.
 * `results` holds one entry per input; more than one input prints a JSON array in input order.
 */
export async function runOffline(
  format: () => OutputFormat,
  evaluate: () => Promise<Evaluation>,
): Promise<number> {
  let fmt: OutputFormat = 'table';
  try {
    fmt = format();
    const evaluation = await evaluate();
    const { results, batch, table, yaml } = evaluation;
    const failed = evaluation.failed === true || results.some((r) => isErrorResult(r));
    const value = batch ? results : results[0];
    if (fmt === 'yaml' && yaml && !failed) process.stdout.write(yaml(value));
    else print(value, fmt, table);
    return failed ? 1 : 0;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`flotilla: ${err.message}`);
      return 2;
    }
    const message = err instanceof Error ? err.message : String(err);
    print({ error: message }, fmt);
    return 1;
  }
}

export interface Evaluation {
  results: unknown[];
  batch: boolean;
  table?: (r: unknown) => string;
  /** Replaces the default `-o yaml` (one YAML document of the result), e.g. by a manifest stream. */
  yaml?: (r: unknown) => string;
  /** Exit 1 although every input was evaluated: the verdict itself fails (a policy denied an object). */
  failed?: boolean;
}

/**
 * The whole life of an offline command: `--help`, argument parsing (usage errors exit 2), then
 * `evaluate` with the parsed values, its output in the requested format and its exit code.
 */
export function offlineCommand(
  command: string,
  help: string,
  options: Options,
  evaluate: (values: Record<string, ArgValue>) => Evaluation | Promise<Evaluation>,
): (argv: string[]) => Promise<number> {
  return (argv) => {
    if (argv.includes('--help') || argv.includes('-h')) {
      process.stdout.write(`${help}\n`);
      return Promise.resolve(0);
    }
    let values: Record<string, ArgValue> = {};
    return runOffline(
      () => {
        const parsed = parseCommandArgs(command, argv, options);
        values = parsed.values;
        return parsed.output;
      },
      async () => evaluate(values),
    );
  };
}

export function errorResult(err: unknown): { error: string } {
  if (err instanceof UsageError) throw err;
  return { error: err instanceof Error ? err.message : String(err) };
}

function isErrorResult(r: unknown): boolean {
  return typeof r === 'object' && r !== null && 'error' in r && Object.keys(r).length === 1;
}

function print(value: unknown, fmt: OutputFormat, table?: (r: unknown) => string): void {
  printResult(value, fmt, () => {
    const items = Array.isArray(value) && table ? value : [value];
    return items
      .map((item) => (isErrorResult(item) || !table ? JSON.stringify(item, null, 2) : table(item)))
      .join('\n');
  });
}

/** An offline command's options with the common ones, for completion and the option-spelling check. */
export function describeOffline(options: Options, subcommands?: readonly string[]): CommandDescription {
  return { options: { ...options, ...OFFLINE_COMMON_OPTIONS }, ...(subcommands && { subcommands }) };
}
