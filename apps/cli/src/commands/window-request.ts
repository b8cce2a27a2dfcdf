import type { SyncWindowView } from '@flotilla/contract';
import { readOneDocument, UsageError } from '../offline/offline-command.js';
import type { OptionSpecs, OptionValue } from '../options/parse-options.js';

/**
 * The body of `POST /api/v1/windows` and `PUT /api/v1/windows/NAME` from what the person gave:
 * a file (`-f`, the request body as YAML or JSON) or flags, one per field. The hub validates the
 * fields (schedule, duration, time zone); a refusal names the flag (WINDOW_API_FIELDS).
 * Light on imports: the offline `flotilla windows` reads the options and sub-commands from here.
 */

type HubArgValue = OptionValue;

const stringValue = (value: HubArgValue): string | undefined =>
  typeof value === 'string' ? value : undefined;

/** The sub-commands that ask the hub; `flotilla windows` with anything else is the offline evaluator. */
export const HUB_SUBCOMMANDS = [
  'list',
  'show',
  'history',
  'next',
  'create',
  'update',
  'delete',
  'calendar',
] as const;

export const WINDOW_EDIT_OPTIONS = {
  file: { type: 'string', short: 'f' },
  kind: { type: 'string' },
  schedule: { type: 'string' },
  duration: { type: 'string' },
  'time-zone': { type: 'string' },
  applications: { type: 'string' },
  namespaces: { type: 'string' },
  clusters: { type: 'string' },
  projects: { type: 'string' },
  'manual-sync': { type: 'boolean' },
  'match-all': { type: 'boolean' },
  description: { type: 'string' },
  reason: { type: 'string' },
  // calendar's
  since: { type: 'string' },
  days: { type: 'string' },
} as const satisfies OptionSpecs;

/** The flag of each field of the request, for the hub's refusals. */
export const WINDOW_API_FIELDS = {
  kind: 'kind',
  schedule: 'schedule',
  duration: 'duration',
  timeZone: 'time-zone',
  applications: 'applications',
  namespaces: 'namespaces',
  clusters: 'clusters',
  projects: 'projects',
  manualSync: 'manual-sync',
  andOperator: 'match-all',
  description: 'description',
  reason: 'reason',
} as const;

/** The window's own flags: everything but `-f` and `--reason` (which goes with a file too). */
const FIELD_FLAGS = Object.keys(WINDOW_EDIT_OPTIONS).filter(
  (f) => !['file', 'reason', 'since', 'days'].includes(f),
);

export const WINDOW_EDIT_USAGE = [
  'window flags (or -f FILE, the request body as YAML or JSON: name, kind, schedule, duration, timeZone,',
  'applications, namespaces, clusters, projects, manualSync, andOperator, description):',
  '  --kind allow|deny      --schedule CRON (5 fields)      --duration 1h30m      --time-zone ZONE (UTC)',
  '  --applications GLOBS   --namespaces GLOBS   --clusters GLOBS   (comma-separated; none: matches nothing)',
  '  --projects NAMES       the projects it governs (none: every project)',
  '  --manual-sync          manual syncs pass (allow) or are not held (deny) while it is active',
  '  --match-all            a target must match every selector given, not any',
  '  --description TEXT     --reason TEXT (why this change: the history and the audit log)',
].join('\n');

/** The fields the flags given set, by API name; booleans only when given (they only switch on). */
function fieldsOfFlags(values: Record<string, HubArgValue>): Record<string, unknown> {
  const list = (flag: string) => {
    const raw = stringValue(values[flag]);
    return raw === undefined
      ? undefined
      : raw
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
  };
  const fields: Record<string, unknown> = {
    kind: stringValue(values['kind']),
    schedule: stringValue(values['schedule']),
    duration: stringValue(values['duration']),
    timeZone: stringValue(values['time-zone']),
    applications: list('applications'),
    namespaces: list('namespaces'),
    clusters: list('clusters'),
    projects: list('projects'),
    manualSync: values['manual-sync'] === true ? true : undefined,
    andOperator: values['match-all'] === true ? true : undefined,
    description: stringValue(values['description']),
  };
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

/** The window fields a view carries, as a request body (a view's version and times are not input). */
export function requestOfView(w: SyncWindowView): Record<string, unknown> {
  return {
    kind: w.kind,
    schedule: w.schedule,
    duration: w.duration,
    timeZone: w.timeZone,
    applications: w.applications,
    namespaces: w.namespaces,
    clusters: w.clusters,
    projects: w.projects,
    manualSync: w.manualSync,
    andOperator: w.andOperator,
    description: w.description,
  };
}

/** Whether any window field came as a flag (not counting `-f` and `--reason`). */
export function hasWindowFlags(values: Record<string, HubArgValue>): boolean {
  return FIELD_FLAGS.some((f) => values[f] !== undefined);
}

/**
 * The request: the file's body, or `base` (the current window, on update) with the flags given
 * on top; `--reason` in both cases. A file and window flags together are a usage error: which
 * one would win is a guess.
 */
export function windowRequest(
  values: Record<string, HubArgValue>,
  base: Record<string, unknown> = {},
): Record<string, unknown> {
  const file = stringValue(values['file']);
  const reason = stringValue(values['reason']);
  if (file !== undefined && hasWindowFlags(values))
    throw new UsageError('give the window in a file (-f) or with flags, not both');
  const body = file !== undefined ? readOneDocument(file) : { ...base, ...fieldsOfFlags(values) };
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new UsageError(`${file}: expected one sync window (a YAML or JSON object)`);
  return { ...(body as Record<string, unknown>), ...(reason !== undefined && { reason }) };
}
