import { z } from 'zod';

/**
 * A custom health check in Argo CD's form: the `health.lua` of `resource_customizations/<key>/`.
 * The hub only checks that it compiles; agents run it on the objects of its kind.
 */
export const healthRuleSchema = z.object({
  /** `<group>/<kind>`, or `<Kind>` alone for a core kind; `_` in either stands for anything. */
  key: z.string().min(1).max(317),
  /** The Lua source (at most 64 KiB, checked by the hub). */
  script: z.string(),
  /** Where the hub took it from, so a verdict can be traced to a file and a commit. */
  source: z.object({
    /** `fleet`: a fleet repository's resource_customizations (wins); `hub`: FLOTILLA_HEALTH_LUA_DIR. */
    origin: z.enum(['fleet', 'hub']),
    file: z.string(),
    repoUrl: z.string().optional(),
    /** The commit that last changed it (fleet rules). */
    commit: z.string().optional(),
  }),
});
export type HealthRule = z.infer<typeof healthRuleSchema>;
