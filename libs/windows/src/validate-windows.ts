import { fieldPath, syncWindowSchema, type SyncWindow } from '@flotilla/contract';
import { CompiledWindow } from './compiled-window.js';
import { WindowError } from './window-error.js';

/**
 * Checks a list of sync windows as written by people (YAML/JSON already parsed) and returns them
 * with defaults filled in. Every window's kind, schedule, duration and time zone is checked; the
 * first problem is thrown as a WindowError naming the window's index and field.
 */
export function validateWindows(input: unknown): SyncWindow[] {
  if (input === null || input === undefined) return [];
  if (!Array.isArray(input)) {
    throw new WindowError(
      'invalid-windows',
      null,
      '(root)',
      `expected a list of sync windows, got ${describe(input)}`,
    );
  }
  return input.map((raw: unknown, index) => {
    const candidate =
      typeof raw === 'object' && raw !== null && (raw as { timeZone?: unknown }).timeZone === ''
        ? { ...raw, timeZone: 'UTC' }
        : raw;
    const parsed = syncWindowSchema.safeParse(candidate);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue?.path[0];
      const path = `[${index}]${issue && issue.path.length > 0 ? `.${fieldPath(issue.path)}` : ''}`;
      const code =
        field === 'kind' ? 'invalid-kind' : field === 'timeZone' ? 'invalid-time-zone' : 'invalid-field';
      const detail =
        field === 'kind'
          ? `kind must be allow or deny, not ${JSON.stringify((raw as { kind?: unknown }).kind) ?? 'missing'}`
          : `${path === `[${index}]` ? 'window' : fieldPath(issue?.path ?? [])}: ${issue?.message ?? 'invalid'}`;
      throw new WindowError(code, index, path, detail);
    }
    CompiledWindow.compile(parsed.data, index);
    return parsed.data;
  });
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${JSON.stringify(value)}`;
}
