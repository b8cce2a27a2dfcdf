import { apiInputs, syncWindowSchema, type SyncWindow } from '@flotilla/contract';
import { validateWindows, WindowError } from '@flotilla/windows';
import { z } from 'zod';
import { HubError, parseInput } from '../../common/hub-error.js';

export const windowNameSchema = z
  .string()
  .regex(
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/,
    'lower-case letters, digits and "-", starting and ending alphanumeric',
  )
  .max(63);

/** What people send: the window's own fields (libs/contract SyncWindow) plus who-facing extras. */
const windowBodySchema = z
  .object({
    description: z.string().max(500).default(''),
    /** The projects whose targets the window governs; empty means every project. */
    projects: z.array(windowNameSchema).max(100).default([]),
    /** Why this change; kept in the window's history and the audit log. */
    reason: z.string().max(1000).default(''),
  })
  .passthrough();

export const createWindowSchema = z.object({ name: windowNameSchema }).passthrough();
export const deleteWindowQuery = z.object({ reason: z.string().max(1000).default('') });

export interface WindowInput {
  window: SyncWindow;
  /** Sorted and without repeats, so that the same scope is always stored the same way. */
  projects: string[];
  description: string;
  reason: string;
}

/**
 * The whole body as one schema, for the OpenAPI document: a window's fields (checked by
 * validateWindows), the extras above, and the name (required on create; on update, the path's).
 */
export const windowRequestSchema = syncWindowSchema
  .extend(windowBodySchema.shape)
  .extend({ name: windowNameSchema.optional() })
  .strict()
  .register(apiInputs, { id: 'SyncWindowRequest' });

const windowFields = Object.keys(syncWindowSchema.shape);
const ALLOWED_FIELDS = new Set(['name', ...windowFields, 'projects', 'description', 'reason']);

/**
 * Reads a window from a request body: the window fields go through libs/windows' validateWindows
 * (so the schedule, duration and time zone are really evaluable), and its errors keep their field
 * path (`schedule`, `clusters[1]`) without the list index a single window does not have.
 */
export function parseWindowInput(body: unknown): WindowInput {
  const extras = parseInput(windowBodySchema, body);
  const raw = body as Record<string, unknown>;
  // A misspelt field ("shedule") would otherwise vanish and leave a window other than the one meant.
  const unknown = Object.keys(raw).find((k) => !ALLOWED_FIELDS.has(k));
  if (unknown !== undefined) {
    throw new HubError(
      400,
      'invalid-request',
      `invalid request body: ${unknown}: not a sync window field (expected one of ${[...ALLOWED_FIELDS].join(', ')})`,
      unknown,
    );
  }
  const fields = Object.fromEntries(windowFields.filter((k) => k in raw).map((k) => [k, raw[k]]));
  try {
    const [window] = validateWindows([fields]);
    return {
      window: window as SyncWindow,
      projects: [...new Set(extras.projects)].sort(),
      description: extras.description,
      reason: extras.reason,
    };
  } catch (e) {
    if (!(e instanceof WindowError)) throw e;
    const path = e.path.replace(/^\[0\]\.?/, '') || '(root)';
    const message = e.message.replace(/^sync window 0 \(\[0\]\.?[^)]*\): /, '');
    throw new HubError(400, e.code, `invalid sync window: ${path}: ${message}`, path, [{ path, message }]);
  }
}
