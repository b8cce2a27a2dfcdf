import { syncPolicySchema, type SyncPolicy } from '@flotilla/contract';

/**
 * The agent's sync policy from an Application's `syncPolicy`, in either form:
 * Argo CD's (`automated: {prune, selfHeal, allowEmpty}`, each false unless set; no `automated` = manual)
 * or Flotilla's flat booleans. With no syncPolicy at all Flotilla's defaults apply (automated, self-heal, prune):
 * a pull agent that waits for a person would defeat the point.
 */
export function syncPolicyOf(raw: unknown): SyncPolicy {
  if (raw === undefined || raw === null) return syncPolicySchema.parse({});
  if (typeof raw !== 'object' || Array.isArray(raw)) return syncPolicySchema.parse({});
  const o = raw as Record<string, unknown>;
  const automated = o['automated'];
  if (typeof automated === 'boolean' || automated === undefined) {
    if (automated === undefined && ('selfHeal' in o || 'prune' in o || 'allowEmpty' in o)) {
      return syncPolicySchema.parse(pickBooleans(o));
    }
    if (automated === undefined) return { ...syncPolicySchema.parse({}), automated: false, selfHeal: false };
    return syncPolicySchema.parse(pickBooleans(o));
  }
  const a = typeof automated === 'object' && automated !== null ? (automated as Record<string, unknown>) : {};
  // Argo CD's own defaults inside `automated`: nothing is pruned or healed unless asked.
  return syncPolicySchema.parse({
    automated: true,
    prune: false,
    selfHeal: false,
    allowEmpty: false,
    ...pickBooleans(a),
  });
}

function pickBooleans(o: Record<string, unknown>): Partial<SyncPolicy> {
  const out: Partial<SyncPolicy> = {};
  for (const k of ['automated', 'selfHeal', 'prune', 'allowEmpty'] as const) {
    if (typeof o[k] === 'boolean') out[k] = o[k];
  }
  return out;
}
