import { type CommandDescription } from '../command.js';
import { HubApiError, HubClient, HubUnreachableError } from '../fleet/hub-client.js';
import { UsageError } from '../offline/offline-command.js';
import { cliConfigPath, loadCliConfig, selectContext, type CliContext } from '../fleet/cli-config.js';
import { HUB_COMMON_OPTIONS } from '../options/common-options.js';
import { parseOptions, type OptionSpecs, type OptionValue } from '../options/parse-options.js';
import { flagOfPath, inFlagWords, type ApiFieldFlags } from '../options/api-fields.js';

export { HUB_COMMON_OPTIONS };

import {
  columnsTable,
  formatResult,
  formatTable,
  parseHubOutputFormat,
  printResult,
  type Column,
  type ListingFormat,
} from '../options/output-format.js';
import { WATCH_INTERVAL_MS, watch } from '../watch/watch.js';

export { columnsTable, formatTable, printResult, type Column, type ListingFormat };

/**
 * Shared plumbing for the hub-backed commands (`clusters`, `appsets`, `targets`, `history`): the
 * common flags (`--hub`, `--token`, `-o`), output formats, and exit codes — 0 done, 1 the hub was
 * unreachable or refused (one line on stderr naming the URL and the hub's code), 2 usage.
 */

export const DEFAULT_HUB_URL = 'http://127.0.0.1:8080';

export type HubArgValue = OptionValue;

export interface HubCommandArgs {
  values: Record<string, HubArgValue>;
  positionals: string[];
  /** `wide` only when what is asked is one of the spec's listings. */
  output: ListingFormat;
  /** True when `-o` was given, so a command can refuse a conflicting flag such as `--ndjson`. */
  outputGiven: boolean;
  client: HubClient;
  /** Where the hub URL came from, for messages ("the context flotilla-demo", "--hub"). */
  hubSource: string;
}

export interface HubCommandSpec {
  /** The command's name, for messages: `flotilla <name>: …`. */
  name: string;
  /** Printed by `--help`. */
  usage: string;
  options: OptionSpecs;
  /** The words that may follow the command's name (`list`, `get`, …), for completion. */
  subcommands?: readonly string[];
  /**
   * The sub-commands that list, and so take `-o wide` (more columns); `''` is the command alone
   * (`flotilla targets`). The others refuse `-o wide` before they ask the hub anything.
   */
  listings?: readonly string[];
  /**
   * Which flag fills which field of the requests it sends (`{ appSet: 'appset' }`), so that a
   * refusal naming the field names the flag the person typed instead (options/api-fields.ts).
   */
  apiFields?: ApiFieldFlags;
}

/** A hub-backed command's options with the common ones, for completion and the option-spelling check. */
export function describeHubCommand(spec: HubCommandSpec): CommandDescription {
  return {
    options: { ...spec.options, ...HUB_COMMON_OPTIONS },
    ...(spec.subcommands && { subcommands: spec.subcommands }),
    ...(spec.listings && { listings: spec.listings }),
  };
}

const COMMON_USAGE = [
  'common options:',
  "  --hub URL      the hub's base URL (default $FLOTILLA_HUB_URL, else the context's, else",
  `                 ${DEFAULT_HUB_URL})`,
  '  --token T      API token (or the admin token) sent as a Bearer token (default $FLOTILLA_TOKEN,',
  "                 else the context's when the hub is the context's)",
  "  --context NAME a context of 'flotilla context list' (default $FLOTILLA_CONTEXT, else the current)",
  '  -o FORMAT      table (default), json or yaml; a listing also wide: its table with more columns',
].join('\n');

export function parseHubArgs(argv: string[], spec: HubCommandSpec): HubCommandArgs & { help: boolean } {
  const options: OptionSpecs = { ...spec.options, ...HUB_COMMON_OPTIONS };
  const parsed = parseOptions(argv, options, { command: spec.name, allowPositionals: true });
  const values: Record<string, HubArgValue> = parsed.values;
  const positionals = parsed.positionals;
  const rawOutput = values['output'];
  const output = parseHubOutputFormat(rawOutput, listingOf(spec, positionals));
  const { client, source } = connectHub(values);
  return {
    values,
    positionals,
    output,
    outputGiven: rawOutput !== undefined,
    client,
    hubSource: source,
    help: values['help'] === true,
  };
}

/**
 * A client of the hub the flags (`--hub`, `--token`, `--context`), the environment or the CLI's
 * config name, and where its URL came from; a URL that is not http(s) is a usage error.
 */
export function connectHub(values: Record<string, HubArgValue>): { client: HubClient; source: string } {
  const { hub, token, source } = resolveHub(values);
  let hubUrl: URL;
  try {
    hubUrl = new URL(hub);
  } catch {
    throw new UsageError(`--hub must be an http(s) URL, not '${hub}'`);
  }
  if (hubUrl.protocol !== 'http:' && hubUrl.protocol !== 'https:') {
    throw new UsageError(`--hub must be an http(s) URL, not '${hub}'`);
  }
  return { client: new HubClient(hub.replace(/\/+$/, ''), token || undefined), source };
}

/** Whether `positionals` ask for one of the spec's listings, and how its listings are spelled. */
function listingOf(
  spec: HubCommandSpec,
  positionals: string[],
): { command: string; listing: boolean; listings: string[] } {
  const listings = spec.listings ?? [];
  const sub = positionals[0] ?? '';
  const known = spec.subcommands?.includes(sub) === true;
  return {
    command: known ? `${spec.name} ${sub}` : spec.name,
    // A word that is no sub-command goes to the command alone, which says what is wrong with it
    // (`flotilla targets web-eu1 -o wide`: an unexpected argument, not a wrong -o).
    listing: listings.includes(known ? sub : ''),
    listings: listings.map((l) => (l ? `${spec.name} ${l}` : spec.name)),
  };
}

/**
 * Which hub and token: flags, then the environment, then the selected context of the CLI's config
 * file, then the default URL. A context's token is only sent to that context's own hub, never to a
 * URL given by a flag or the environment. The file is not read when flags and environment say all.
 */
function resolveHub(values: Record<string, HubArgValue>): { hub: string; token?: string; source: string } {
  const env = process.env;
  const flagHub = stringValue(values['hub']);
  const givenHub = flagHub ?? env['FLOTILLA_HUB_URL'];
  const givenToken = stringValue(values['token']) ?? env['FLOTILLA_TOKEN'];
  const wanted = stringValue(values['context']) ?? (env['FLOTILLA_CONTEXT'] || undefined);
  let context: CliContext | undefined;
  if (wanted !== undefined || givenHub === undefined || givenToken === undefined) {
    const path = cliConfigPath();
    context = selectContext(loadCliConfig(path), wanted, path);
  }
  if (givenHub !== undefined) {
    const sameHub = context !== undefined && sameUrl(context.hub, givenHub);
    return {
      hub: givenHub,
      token: givenToken ?? (sameHub ? context?.token : undefined),
      source: flagHub !== undefined ? '--hub' : '$FLOTILLA_HUB_URL',
    };
  }
  if (context)
    return { hub: context.hub, token: givenToken ?? context.token, source: `the context ${context.name}` };
  return { hub: DEFAULT_HUB_URL, token: givenToken, source: 'the default URL' };
}

function sameUrl(a: string, b: string): boolean {
  return a.replace(/\/+$/, '') === b.replace(/\/+$/, '');
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
  let hubSource: string | undefined;
  let values: Record<string, HubArgValue> = {};
  try {
    const args = parseHubArgs(argv, spec);
    hubSource = args.hubSource;
    values = args.values;
    if (args.help) {
      process.stdout.write(`${spec.usage}\n\n${COMMON_USAGE}\n`);
      return 0;
    }
    return await body(args);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`flotilla ${spec.name}: ${err.withExcerpt}`);
      return 2;
    }
    if (err instanceof HubApiError) {
      // A field read from a file (-f) keeps its path: no flag was typed for it.
      const flag = flagOfPath(
        err.inputPath,
        spec.apiFields,
        (f) => values[f] !== undefined || values['file'] === undefined,
      );
      console.error(`flotilla ${spec.name}: ${describeApiError(err, flag)}`);
      return 1;
    }
    if (err instanceof HubUnreachableError) {
      console.error(`flotilla ${spec.name}: ${err.message}`);
      // Nothing said which hub: the first thing a new user meets after starting the demo elsewhere.
      if (hubSource === 'the default URL')
        console.error(
          "  no hub was named: use --hub URL, $FLOTILLA_HUB_URL or 'flotilla context use NAME' ('flotilla demo' writes the context flotilla-demo)",
        );
      return 1;
    }
    throw err;
  }
}

/**
 * One line: what was asked of which URL, and the hub's `code`, message and input path — in the words
 * of `flag` when a flag the person gave filled that field; for a hub failure (5xx) also the
 * request's id, which is what its operators search the hub's log for.
 */
export function describeApiError(err: HubApiError, flag?: string): string {
  const code = err.code ? ` ${err.code}` : '';
  const oneLine = err.hubMessage.replace(/\s*\n\s*/g, ' ');
  const path = err.inputPath;
  const inFlag = path !== undefined && flag !== undefined;
  const at = path && !inFlag ? ` (at ${path})` : '';
  const message = inFlag ? inFlagWords(oneLine, path, flag) : oneLine;
  const request = err.status >= 500 && err.requestId ? ` [request ${err.requestId}]` : '';
  return `${err.method} ${err.url} → ${err.status}${code}: ${message}${at}${request}`;
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
  if (!sha) return '-';
  // A multi-source target's revision is each source's, comma-separated: commits shortened, versions kept.
  if (sha.includes(','))
    return sha
      .split(',')
      .map((part) => (/^[0-9a-f]{40}$/.test(part) ? part.slice(0, 7) : part))
      .join(',');
  return sha.slice(0, 7);
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

/** `k=v,k2=v2` (the `--selector` flag) → a matchLabels selector; undefined when not given. */
export function parseSelector(raw: string | undefined): { matchLabels: Record<string, string> } | undefined {
  if (raw === undefined) return undefined;
  const matchLabels: Record<string, string> = {};
  for (const pair of raw.split(',').filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--selector takes k=v pairs separated by commas, not '${pair}'`);
    matchLabels[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return { matchLabels };
}

/** The first line of standard input: how a secret reaches a command without a flag (`--token -`). */
export async function firstLineOfStdin(): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0]?.trim() || undefined;
}

/** The options of a read command that can `--watch` (targets, history, rollouts). */
export const WATCH_OPTIONS = {
  watch: { type: 'boolean', short: 'w' },
  timeout: { type: 'string' },
} as const;

export const WATCH_USAGE = [
  `-w, --watch     show the answer again whenever it changes (asked every ${WATCH_INTERVAL_MS / 1000} s) until Ctrl-C;`,
  '                -o json prints one line per change',
  '--timeout S     with --watch: stop after S seconds (exit 0)',
].join('\n');

/**
 * Prints what `read` answers, once, or with `--watch` again whenever it changes. `read` is asked
 * once per poll; `table` formats its answer for people.
 */
export async function showOrWatch<T>(
  args: Pick<HubCommandArgs, 'values' | 'output'>,
  read: () => Promise<T>,
  table: (value: T, wide: boolean) => string,
): Promise<number> {
  const timeout = stringValue(args.values['timeout']);
  if (args.values['watch'] !== true) {
    if (timeout !== undefined) throw new UsageError('--timeout applies with --watch');
    const value = await read();
    printResult(value, args.output, (wide) => table(value, wide));
    return 0;
  }
  if (timeout !== undefined && !/^[1-9]\d*$/.test(timeout))
    throw new UsageError(`--timeout must be a whole number of seconds, not '${timeout}'`);
  await watch(
    args.output === 'wide' ? 'table' : args.output,
    async () => {
      const value = await read();
      return formatResult(value, args.output, (wide) => table(value, wide));
    },
    {
      intervalMs: WATCH_INTERVAL_MS,
      ...(timeout !== undefined && { timeoutMs: Number(timeout) * 1000 }),
    },
  );
  return 0;
}

/**
 * `--hub` may stand alone (the hub of $FLOTILLA_HUB_URL or the context): parseArgs wants a value, so
 * a bare one is taken out and remembered.
 */
export function hubFlag(argv: string[]): { argv: string[]; given: boolean } {
  const out: string[] = [];
  let given = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      out.push(...argv.slice(i));
      break;
    }
    if (arg === '--hub') {
      given = true;
      const next = argv[i + 1];
      if (next !== undefined && !next.startsWith('-')) {
        out.push(arg, next);
        i++;
      }
      continue;
    }
    if (arg.startsWith('--hub=')) given = true;
    out.push(arg);
  }
  return { argv: out, given };
}
