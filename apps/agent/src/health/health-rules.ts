import { type HealthRule, type KubeObject } from '@flotilla/contract';
import { createHealthAssessor, type HealthAssessor as LibHealthAssessor } from '@flotilla/health';
import { type HealthAssessor, type ResourceHealth } from './target-health.js';

/**
 * The agent's one health assessor: `@flotilla/health`'s built-in rules plus the custom Lua rules the
 * hub sends with the assignments. Every reconciler holds this same object, so waves, health reports
 * and automatic rollback all judge with the rules of the latest assignments. A new set builds a new
 * assessor first (a fresh Lua VM), then swaps it in and frees the old VM.
 */
export class RuledHealthAssessor implements HealthAssessor {
  private signature = '';
  private count = 0;

  private constructor(private current: LibHealthAssessor) {}

  static async create(rules: readonly HealthRule[] = []): Promise<RuledHealthAssessor> {
    const assessor = new RuledHealthAssessor(await createHealthAssessor());
    await assessor.setRules(rules);
    return assessor;
  }

  /** How many custom rules judge now. */
  get ruleCount(): number {
    return this.count;
  }

  assess(obj: KubeObject): ResourceHealth | null {
    return this.current.assess(obj);
  }

  /** Judges with these rules from now on; false when they are the ones already in use. */
  async setRules(rules: readonly HealthRule[]): Promise<boolean> {
    // Only what judges counts: a rule moved to another file or commit judges the same.
    const signature = rules.length === 0 ? '' : JSON.stringify(rules.map((r) => [r.key, r.script]));
    if (signature === this.signature) return false;
    const next = await createHealthAssessor({ luaScripts: new Map(rules.map((r) => [r.key, r.script])) });
    const previous = this.current;
    this.current = next;
    this.signature = signature;
    this.count = rules.length;
    // assess() is synchronous: no judgement can be half-way through the old VM here.
    previous.close();
    return true;
  }

  close(): void {
    this.current.close();
  }
}
