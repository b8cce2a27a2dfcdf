import { type GroupVersionKind } from '../object-fields.js';

/** A health script's place in Argo CD's `resource_customizations` layout. */
export interface LuaRuleKey {
  /** The key as given: `<group>/<kind>`, or `<kind>` alone for the core group, `_` standing for "anything". */
  key: string;
  group: RegExp;
  kind: RegExp;
  wildcard: boolean;
  /** Literal characters in the key; the more, the more specific a wildcard match. */
  specificity: number;
}

function pattern(part: string): RegExp {
  const escaped = part
    .split('_')
    .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${escaped}$`);
}

export function parseLuaRuleKey(key: string): LuaRuleKey {
  const slash = key.lastIndexOf('/');
  const group = slash >= 0 ? key.slice(0, slash) : '';
  const kind = slash >= 0 ? key.slice(slash + 1) : key;
  return {
    key,
    group: pattern(group),
    kind: pattern(kind),
    wildcard: key.includes('_'),
    specificity: key.replace(/_/g, '').length,
  };
}

/**
 * Finds the script for a kind: an exact `<group>/<kind>` first; a `_` wildcard directory only when no exact
 * one exists. Among several wildcard matches the most specific wins (then the first by name), so the choice
 * does not depend on map order as it does in Argo CD.
 */
export class LuaRuleIndex<T> {
  private readonly exact = new Map<string, T>();
  private readonly wildcards: { key: LuaRuleKey; value: T }[] = [];

  constructor(entries: Iterable<[string, T]>) {
    for (const [key, value] of entries) {
      const parsed = parseLuaRuleKey(key);
      if (parsed.wildcard) this.wildcards.push({ key: parsed, value });
      else this.exact.set(normalise(key), value);
    }
    this.wildcards.sort(
      (a, b) => b.key.specificity - a.key.specificity || a.key.key.localeCompare(b.key.key),
    );
  }

  get size(): number {
    return this.exact.size + this.wildcards.length;
  }

  find(gvk: GroupVersionKind): T | undefined {
    const exact = this.exact.get(`${gvk.group}/${gvk.kind}`);
    if (exact !== undefined) return exact;
    return this.wildcards.find(({ key }) => key.group.test(gvk.group) && key.kind.test(gvk.kind))?.value;
  }
}

/** `Pod` (Argo CD's key for a core kind), `/Pod` and `core/Pod`… all name the core group as `/Pod`. */
function normalise(key: string): string {
  const slash = key.lastIndexOf('/');
  if (slash < 0) return `/${key}`;
  const group = key.slice(0, slash);
  return group === 'core' || group === 'v1' ? `/${key.slice(slash + 1)}` : key;
}
