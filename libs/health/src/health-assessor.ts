import { builtinRuleFor } from './builtin/builtin-rules.js';
import { pendingDeletion } from './builtin/pending-deletion.js';
import { type HealthResult } from './health-result.js';
import { groupVersionKind, isRecord } from './object-fields.js';
import { type CompiledScript, type LuaRuntime } from './lua/lua-runtime.js';
import { LuaRuleIndex } from './lua/lua-rule-index.js';

export interface HealthAssessor {
  /** The object's health, or null when no rule knows its kind (Argo CD leaves such objects out of app health). */
  assess(obj: unknown): HealthResult | null;
  /** Frees the Lua VM, if one was started. */
  close(): void;
}

export interface HealthAssessorOptions {
  /**
   * Custom rules: `<group>/<kind>` (Argo CD's `resource_customizations` layout; `<Kind>` alone for core kinds;
   * `_` as a wildcard directory name) → `health.lua` source. A custom rule overrides the built-in one.
   */
  luaScripts?: Map<string, string>;
}

/**
 * Builds an assessor. The Lua VM is started only when scripts are given; each script compiles once, on first
 * use, and a script that does not compile or fails makes its objects Unknown with the error as message.
 */
export async function createHealthAssessor(opts: HealthAssessorOptions = {}): Promise<HealthAssessor> {
  const scripts = opts.luaScripts ?? new Map<string, string>();
  let runtime: LuaRuntime | undefined;
  if (scripts.size > 0) {
    const { LuaRuntime } = await import('./lua/lua-runtime.js');
    runtime = await LuaRuntime.create();
  }
  const index = new LuaRuleIndex(
    [...scripts.entries()].map(([key, source]) => [key, { key, source }] as const),
  );
  const compiled = new Map<string, CompiledScript>();

  return {
    assess(obj: unknown): HealthResult | null {
      if (!isRecord(obj)) return null;
      const gvk = groupVersionKind(obj);
      const script = runtime ? index.find(gvk) : undefined;
      if (runtime && script) {
        let program = compiled.get(script.key);
        if (!program) {
          program = runtime.compile(`${script.key}/health.lua`, script.source);
          compiled.set(script.key, program);
        }
        return runtime.run(program, obj);
      }
      const rule = builtinRuleFor(gvk);
      if (!rule) return null;
      return pendingDeletion(obj) ?? rule(obj, gvk);
    },
    close(): void {
      runtime?.close();
      runtime = undefined;
    },
  };
}
