// What one requested run was asked for beyond the defaults: read from a request, stored in `options`, read back.
import { SyncOptionError, type ObjectRef, type SyncOperation } from '@flotilla/contract';
import { HubError } from '../common/hub-error.js';
import { runSyncSettingsOf } from '../desired-state/sync-policy.js';
import type { TargetOperation } from '../generated/prisma/client.js';

/** What one run was asked for beyond the defaults, as stored in `options` and shown in views. */
export interface RunOptions {
  prune: boolean;
  dryRun: boolean;
  force?: boolean;
  syncOptions?: string[];
  revision?: string;
  resources?: ObjectRef[];
  syncPolicy?: NonNullable<SyncOperation['syncPolicy']>;
}

export function optionsOf(r: TargetOperation): RunOptions {
  const o = (r.options ?? {}) as Omit<RunOptions, 'prune' | 'dryRun'> & { prune?: unknown; dryRun?: unknown };
  return {
    prune: o.prune === true,
    dryRun: o.dryRun === true,
    ...(o.force === true && { force: true }),
    ...(o.syncOptions?.length && { syncOptions: o.syncOptions }),
    ...(o.revision !== undefined && { revision: o.revision }),
    ...(o.resources?.length && { resources: o.resources }),
    ...(o.syncPolicy && Object.keys(o.syncPolicy).length > 0 && { syncPolicy: o.syncPolicy }),
  };
}

/** The per-run sync options and --force, read against the appset's option table (refused by name). */
export function runSettings(req: {
  syncOptions: string[];
  force: boolean;
}): NonNullable<SyncOperation['syncPolicy']> {
  try {
    const settings = runSyncSettingsOf(req.syncOptions, 'syncOptions');
    const out: NonNullable<SyncOperation['syncPolicy']> = {};
    for (const [k, v] of Object.entries(settings)) if (v !== undefined) Object.assign(out, { [k]: v });
    if (req.force) out.force = true;
    return out;
  } catch (e) {
    if (e instanceof SyncOptionError) throw new HubError(422, e.code, e.message, e.path);
    throw e;
  }
}

/** What `options` stores of the per-run settings: only what was asked. */
export function runOptions(
  req: { syncOptions: string[]; force: boolean },
  settings: NonNullable<SyncOperation['syncPolicy']>,
): Partial<RunOptions> {
  return {
    ...(req.force && { force: true }),
    ...(req.syncOptions.length > 0 && { syncOptions: req.syncOptions }),
    ...(Object.keys(settings).length > 0 && { syncPolicy: settings }),
  };
}
