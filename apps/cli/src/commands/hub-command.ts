import { parseArgs, type ParseArgsConfig } from 'node:util';
import { HubApiError, HubClient, HubUnreachableError } from '../fleet/hub-client.js';
import { UsageError, type OutputFormat } from '../offline/offline-command.js';

export { printResult } from '../offline/offline-command.js';

/**
 * Shared plumbing for the hub-backed commands (`clusters`, `appsets`, `targets`, `history`): the
 * common flags (`--hub`, `--token`, `-o`), output formats, and exit codes — 0 done, 1 the hub was
 * unreachable or refused (one line on stderr naming the URL and the hub's code), 2 usage.
 */

export const DEFAULT_HUB_URL = 'http://127.0.0.1:8080';

type Options = NonNullable<ParseArgsConfig['options']>;

export type HubArgValue = string | boolean | (string | boolean)[] | undefined;

export interface HubCommandArgs {
  values: Record<string, HubArgValue>;
  positionals: string[];
  output: OutputFormat;
  /** True when `-o` was given, so a command can refuse a conflicting flag such as `--ndjson`. */
  outputGiven: boolean;
  client: HubClient;
}

export interface HubCommandSpec {
  /** The command's name, for messages: `flotilla <name>: …`. */
  name: string;
  /** Printed by `--help`. */
  usage: string;
  options: Options;
}

const COMMON_USAGE = [
  'common options:',
  `  --hub URL      the hub's base URL (default $FLOTILLA_HUB_URL, else ${DEFAULT_HUB_URL})`,
  '  --token T      API token (or the admin token) sent as a Bearer token (default $FLOTILLA_TOKEN)',
  '  -o FORMAT      table (default), json or yaml',
].join('\n');

export function parseHubArgs(argv: string[], spec: HubCommandSpec): HubCommandArgs & { help: boolean } {
  let parsed: { values: Record<string, HubArgValue>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        ...spec.options,
        hub: { type: 'string' },
        token: { type: 'string' },
        output: { type: 'string', short: 'o' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: true,
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  const rawOutput = values['output'];
  const output = rawOutput ?? 'table';
  if (output !== 'json' && output !== 'yaml' && output !== 'table') {
    throw new UsageError(`-o must be table, json or yaml, not '${String(output)}'`);
  }
  const hub = stringValue(values['hub']) ?? process.env['FLOTILLA_HUB_URL'] ?? DEFAULT_HUB_URL;
  let hubUrl: URL;
  try {
    hubUrl = new URL(hub);
  } catch {
    throw new UsageError(`--hub must be an http(s) URL, not '${hub}'`);
  }
  if (hubUrl.protocol !== 'http:' && hubUrl.protocol !== 'https:') {
    throw new UsageError(`--hub must be an http(s) URL, not '${hub}'`);
  }
  const token = stringValue(values['token']) ?? process.env['FLOTILLA_TOKEN'];
  return {
    values,
    positionals,
    output,
    outputGiven: rawOutput !== undefined,
    client: new HubClient(hub.replace(/\/+$/, ''), token || undefined),
    help: values['help'] === true,
  };
}

/**
 * Parses the arguments, runs the command body and turns its outcome into an exit code. The body
 * returns its own exit code (0 unless it has a reason to say otherwise).
 */
export async function runHubCommand(
  argv: string[],
  spec: HubCommandSpec,
  body: (args: HubCommandArgs) => Promise<number>,
): Promise<number> {
  try {
    const args = parseHubArgs(argv, spec);
    if (args.help) {
      process.stdout.write(`${spec.usage}\n\n${COMMON_USAGE}\n`);
      return 0;
    }
    return await body(args);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`flotilla ${spec.name}: ${err.message}`);
      return 2;
    }
    if (err instanceof HubApiError) {
      console.error(`flotilla ${spec.name}: ${describeApiError(err)}`);
      return 1;
    }
    if (err instanceof HubUnreachableError) {
      console.error(`flotilla ${spec.name}: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

/** One line: what was asked of which URL, and the hub's `code`, message and input path. */
export function describeApiError(err: HubApiError): string {
  const code = err.code ? ` ${err.code}` : '';
  const at = err.inputPath ? ` (at ${err.inputPath})` : '';
  const message = err.hubMessage.replace(/\s*\n\s*/g, ' ');
  return `${err.method} ${err.url} → ${err.status}${code}: ${message}${at}`;
}

/** Aligned columns separated by three spaces, like kubectl; the last column is not padded. */
export function formatTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('   ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

/** `key: value` lines for one object, keys aligned, for `get` commands. */
export function formatFields(fields: [string, string][]): string {
  const width = Math.max(...fields.map(([k]) => k.length)) + 1;
  return fields.map(([k, v]) => `${`${k}:`.padEnd(width)}  ${v}`).join('\n');
}

/** How long ago `iso` was, in kubectl's coarse style (`42s`, `5m`, `3h`, `2d`); `-` when never. */
export function age(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '-';
  const seconds = Math.max(0, Math.floor((now - Date.parse(iso)) / 1000));
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 2 * 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 2 * 86400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

/** A commit sha shortened as git does by default. */
export function shortSha(sha: string | null | undefined): string {
  return sha ? sha.slice(0, 7) : '-';
}

export function stringValue(value: HubArgValue): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** Option values that may be repeated (`--label a=1 --label b=2`) arrive as arrays. */
export function stringValues(value: HubArgValue): string[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).map(String);
}

/** Positionals after the sub-command: exactly `names`, else a usage error naming what is missing or extra. */
export function expectPositionals(positionals: string[], names: string[], usage: string): string[] {
  if (positionals.length < names.length) {
    throw new UsageError(`missing ${names.slice(positionals.length).join(' ')}; usage: ${usage}`);
  }
  if (positionals.length > names.length) {
    throw new UsageError(`unexpected argument '${positionals[names.length]}'; usage: ${usage}`);
  }
  return positionals;
}

/** Exactly one positional after the sub-command (a name), else a usage error. */
export function expectName(positionals: string[], usage: string): string {
  const [name] = expectPositionals(positionals, ['NAME'], usage);
  if (name === undefined || name === '') throw new UsageError(`missing NAME; usage: ${usage}`);
  return name;
}
