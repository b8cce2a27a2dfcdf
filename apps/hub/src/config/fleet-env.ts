// How the hub steers the fleet: rollout pace, when a cluster counts as offline, the deletion guard, health rules, fleet repositories, break-glass.
import { DEFAULT_DELETION_GUARD_PERCENT } from '@flotilla/plan';
import { z } from 'zod';

export const fleetEnv = z.object({
  ROLLOUT_TICK_SECONDS: z.coerce
    .number()
    .positive()
    .default(5)
    .describe('How often a running rollout looks at its step again (release, bake, advance).'),
  CLUSTER_OFFLINE_SECONDS: z.coerce
    .number()
    .int()
    .positive()
    .default(120)
    .describe(
      'A cluster whose agent has not called for this long is offline: rollouts skip it within their failure budget.',
    ),
  DELETION_GUARD_PERCENT: z.coerce
    .number()
    .min(0)
    .max(100)
    .default(DEFAULT_DELETION_GUARD_PERCENT)
    .describe(
      'An appset expansion that would delete more than this share of its targets (or all of them) waits for confirmation.',
    ),
  FLOTILLA_HEALTH_LUA_DIR: z
    .string()
    .optional()
    .describe(
      "Custom health checks for every cluster, in Argo CD's resource_customizations layout (<group>/<kind>/health.lua); a fleet repository's rule of the same key wins. Checked at start: a script that does not compile stops the hub, naming its file.",
    ),
  FLEET_REPOSITORIES: z
    .string()
    .default('')
    .describe(
      'Fleet repositories the hub reconciles its own objects from, comma-separated: <url>[#<revision>[:<path>]] (revision HEAD, path the root by default).',
    ),
  BREAK_GLASS_MAX_MINUTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1440)
    .describe('The longest a break-glass override may stay open, in minutes (default 24 h).'),
});

export interface FleetConfig {
  appsets: { deletionGuardPercent: number };
  fleet: { repositories: string };
  /** FLOTILLA_HEALTH_LUA_DIR (null: no hub-wide health rules). */
  healthRules: { luaDir: string | null };
  rollouts: { tickSeconds: number; offlineAfterSeconds: number };
  breakGlass: { maxMinutes: number };
}

export function fleetConfig(e: z.output<typeof fleetEnv>): FleetConfig {
  return {
    appsets: { deletionGuardPercent: e.DELETION_GUARD_PERCENT },
    fleet: { repositories: e.FLEET_REPOSITORIES },
    healthRules: { luaDir: e.FLOTILLA_HEALTH_LUA_DIR ?? null },
    rollouts: { tickSeconds: e.ROLLOUT_TICK_SECONDS, offlineAfterSeconds: e.CLUSTER_OFFLINE_SECONDS },
    breakGlass: { maxMinutes: e.BREAK_GLASS_MAX_MINUTES },
  };
}
