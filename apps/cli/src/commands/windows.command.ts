import { type CommandDescription } from '../command.js';
import { describeOffline } from '../offline/offline-command.js';
import { HUB_COMMON_OPTIONS } from '../options/common-options.js';
import { HUB_SUBCOMMANDS, WINDOW_EDIT_OPTIONS } from './window-request.js';
import { evaluateWindows, validateWindows, type WindowEvaluation } from '@flotilla/windows';
import { type SyncWindow } from '@flotilla/contract';
import { errorResult, many, readDocuments, offlineCommand, UsageError } from '../offline/offline-command.js';

const USAGE = `usage: flotilla windows -f WINDOWS [-f WINDOWS]... --at TIME [--at TIME]...
                        [--app NAME] [--namespace NS] [--cluster NAME] [--manual] [-o json|yaml|table]

Evaluates sync windows (Argo CD semantics) for one target and prints
{"canSync": bool, "active": [i...], "matching": [i...], "nextChange": TIME|null}.

  -f, --file WINDOWS  a YAML or JSON list of sync windows; repeatable
  --at TIME           an RFC 3339 time (2026-03-29T02:30:00+02:00); repeatable
  --app NAME          the application name matched by applications globs
  --namespace NS      the destination namespace matched by namespaces globs
  --cluster NAME      the destination cluster matched by clusters globs
  --manual            evaluate a manual sync (windows with manualSync let it through)
  -o, --output        json, yaml or table (default)

With more than one file or time the output is a JSON array: every file with every
time, file-major (file 1 at each --at in order, then file 2 ...). nextChange is the
next instant after TIME at which canSync flips, or null if it does not within a year.

The hub's windows: flotilla windows list | show NAME | history NAME | next TARGET |
calendar NAME | create NAME | update NAME | delete NAME (flotilla windows list --help).`;

const OPTIONS = {
  file: { type: 'string', short: 'f', multiple: true },
  at: { type: 'string', multiple: true },
  app: { type: 'string' },
  namespace: { type: 'string' },
  cluster: { type: 'string' },
  manual: { type: 'boolean' },
} as const;

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** Epoch milliseconds of an RFC 3339 time, keeping any fraction finer than a millisecond. */
export function parseRfc3339(text: string): number {
  const m = RFC3339.exec(text);
  if (!m) throw new UsageError(`--at '${text}' is not an RFC 3339 time (e.g. 2026-03-29T02:30:00Z)`);
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const offsetHours = Number(m[10] ?? 0);
  const offsetMinutes = Number(m[11] ?? 0);
  const base = Date.UTC(year, month - 1, day, hour, minute, second);
  const check = new Date(base);
  if (
    check.getUTCMonth() !== month - 1 ||
    check.getUTCDate() !== day ||
    hour > 23 ||
    minute > 59 ||
    second > 59 ||
    offsetHours > 23 ||
    offsetMinutes > 59
  ) {
    throw new UsageError(`--at '${text}' is not a valid date and time`);
  }
  const sign = m[9] === '-' ? -1 : 1;
  const offset = m[8] ? 0 : sign * (offsetHours * 60 + offsetMinutes) * 60_000;
  const whole = base - offset;
  const fraction = Number(m[7] ?? 0) * 1000;
  const time = whole + fraction;
  // A fraction too small for a double at this magnitude still means "after": t < TIME is strict.
  return fraction > 0 && time === whole ? nextDouble(whole) : time;
}

function nextDouble(x: number): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  view.setBigUint64(0, view.getBigUint64(0) + (x >= 0 ? 1n : -1n));
  return view.getFloat64(0);
}

export function formatTime(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

function readWindows(path: string): unknown {
  const docs = readDocuments(path);
  if (docs.length > 1)
    throw new UsageError(`${path}: expected one YAML list of sync windows, found ${docs.length} documents`);
  return docs[0] ?? [];
}

interface WindowsResult {
  canSync: boolean;
  active: number[];
  matching: number[];
  nextChange: string | null;
}

function toResult(e: WindowEvaluation): WindowsResult {
  return {
    canSync: e.canSync,
    active: e.active,
    matching: e.matching,
    nextChange: e.nextChange === null ? null : formatTime(e.nextChange.getTime()),
  };
}

function table(r: unknown): string {
  const v = r as WindowsResult;
  return `canSync=${v.canSync} active=[${v.active.join(',')}] matching=[${v.matching.join(',')}] nextChange=${v.nextChange ?? '-'}`;
}

const runOffline = offlineCommand('windows', USAGE, OPTIONS, (values) => {
  const files = many(values['file']);
  const times = many(values['at']);
  if (files.length === 0) throw new UsageError(`windows needs at least one -f WINDOWS\n${USAGE}`);
  if (times.length === 0) throw new UsageError(`windows needs at least one --at TIME\n${USAGE}`);
  const instants = times.map(parseRfc3339);
  const target = {
    application: String(values['app'] ?? ''),
    namespace: String(values['namespace'] ?? ''),
    cluster: String(values['cluster'] ?? ''),
  };
  const manual = values['manual'] === true;
  // Read every file first: an unreadable one is a usage error (exit 2) whatever its position.
  const inputs = files.map(readWindows);
  const results: unknown[] = [];
  for (const input of inputs) {
    let windows: SyncWindow[];
    try {
      windows = validateWindows(input);
    } catch (err) {
      const failure = errorResult(err);
      for (let i = 0; i < instants.length; i++) results.push(failure);
      continue;
    }
    for (const at of instants) results.push(toResult(evaluateWindows(windows, target, at, { manual })));
  }
  return { results, batch: results.length > 1, table };
});

/**
 * `flotilla windows list|show|history|next …` ask the hub; anything else is the offline evaluator
 * of CLI.md, which takes no positional arguments, so the two never collide. The hub-backed module
 * loads only when asked for, keeping offline calls fast.
 */
export async function run(argv: string[]): Promise<number> {
  const [first] = argv;
  if (first !== undefined && (HUB_SUBCOMMANDS as readonly string[]).includes(first)) {
    return (await import('./windows-hub.command.js')).run(argv);
  }
  return runOffline(argv);
}

/** Both forms: the offline evaluator's options, and the hub-backed sub-commands with their options. */
export const describe: CommandDescription = {
  options: {
    ...WINDOW_EDIT_OPTIONS,
    ...describeOffline(OPTIONS).options,
    ...HUB_COMMON_OPTIONS,
  },
  subcommands: HUB_SUBCOMMANDS,
  listings: ['list', 'history'],
};
