// An Application's `syncPolicy` read into the agent's sync policy, and a stored target's policy read back.
import {
  readOptions,
  syncPolicySchema,
  TARGET_SYNC_OPTIONS,
  ignoreRuleSchema,
  type IgnoreRule,
  type SyncPolicy,
} from '@flotilla/contract';
import { z } from 'zod';
import { parseRetryPolicy } from './retry-policy.js';
import { asObject } from './sync-settings-fields.js';

/**
 * The agent's sync policy from an Application's `syncPolicy`, in either form:
 * Argo CD's (`automated: {prune, selfHeal, allowEmpty}`, each false unless set; no `automated` = manual)
 * or Flotilla's flat booleans. With no syncPolicy at all Flotilla's defaults apply (automated, self-heal, prune):
 * a pull agent that waits for a person would defeat the point. `syncOptions: ["RespectIgnoreDifferences=true"]`
 * (Argo CD's spelling, beside `automated`) sets `respectIgnoreDifferences`.
 */
export function syncPolicyOf(raw: unknown): SyncPolicy {
  if (raw === undefined || raw === null) return syncPolicySchema.parse({});
  if (typeof raw !== 'object' || Array.isArray(raw)) return syncPolicySchema.parse({});
  const o = raw as Record<string, unknown>;
  const automated = o['automated'];
  if (typeof automated === 'boolean' || automated === undefined) {
    if (automated === undefined && ('selfHeal' in o || 'prune' in o || 'allowEmpty' in o)) {
      return syncPolicySchema.parse({ ...sharedSettingsOf(o), ...pickBooleans(o) });
    }
    if (automated === undefined) {
      return {
        ...syncPolicySchema.parse(sharedSettingsOf(o)),
        automated: false,
        selfHeal: false,
      };
    }
    return syncPolicySchema.parse({ ...sharedSettingsOf(o), ...pickBooleans(o) });
  }
  const a = typeof automated === 'object' && automated !== null ? (automated as Record<string, unknown>) : {};
  // Argo CD's `automated.enabled: false` switches automated sync off and keeps the rest written down.
  if (a['enabled'] === false)
    return syncPolicySchema.parse({
      prune: a['prune'] === true,
      allowEmpty: a['allowEmpty'] === true,
      ...sharedSettingsOf(o),
      automated: false,
      selfHeal: false,
    });
  // Argo CD's own defaults inside `automated`: nothing is pruned or healed unless asked.
  return syncPolicySchema.parse({
    automated: true,
    prune: false,
    selfHeal: false,
    allowEmpty: false,
    ...sharedSettingsOf(o),
    ...pickBooleans(a),
  });
}

function pickBooleans(o: Record<string, unknown>): Partial<SyncPolicy> {
  const out: Partial<SyncPolicy> = {};
  for (const k of ['automated', 'selfHeal', 'prune', 'allowEmpty', 'respectIgnoreDifferences'] as const) {
    if (typeof o[k] === 'boolean') out[k] = o[k];
  }
  return out;
}

/**
 * What `Target.syncPolicy` stores: the agent's sync policy and, when there are any, the ignore rules
 * its drift detection and `respectIgnoreDifferences` use. Kept in one JSON column because both come
 * from the same rendered Application and travel together in the assignment; a target without rules
 * stores exactly the policy, as before.
 */
export type StoredSyncPolicy = SyncPolicy & { ignoreDifferences?: IgnoreRule[] };

/** Splits a stored `Target.syncPolicy` back into the assignment's two fields. */
export function assignmentSyncSettingsOf(stored: unknown): {
  syncPolicy: SyncPolicy;
  ignoreDifferences: IgnoreRule[];
} {
  const o = stored !== null && typeof stored === 'object' && !Array.isArray(stored) ? stored : {};
  const rules = (o as { ignoreDifferences?: unknown }).ignoreDifferences;
  return {
    // The contract's schema drops the rules (unknown key) from the policy itself.
    syncPolicy: syncPolicySchema.parse(o),
    ignoreDifferences: rules === undefined ? [] : z.array(ignoreRuleSchema).parse(rules),
  };
}

/**
 * Sync options for one requested run (`Key=Value`, the appset's own table): checked as an appset's
 * are (unknown, malformed and refused entries throw SyncOptionError naming `path[i]`), and read into
 * the settings that override the appset's for that run.
 */
export function runSyncSettingsOf(options: readonly string[], path: string): Partial<SyncPolicy> {
  readOptions(options, TARGET_SYNC_OPTIONS, path);
  const out = sharedSettingsOf({ syncOptions: options });
  delete out.retry;
  delete out.managedNamespaceMetadata;
  return out;
}

/** What every form of `syncPolicy` reads alike: `syncOptions`, `managedNamespaceMetadata`, `retry`. */
export function sharedSettingsOf(o: Record<string, unknown>): Partial<SyncPolicy> {
  const out: Partial<SyncPolicy> = {};
  const retry = parseRetryPolicy(o['retry']);
  if (retry) out.retry = retry;
  const options = o['syncOptions'];
  if (Array.isArray(options))
    for (const opt of options) {
      if (typeof opt !== 'string') continue;
      const [key, value] = opt.split('=', 2).map((x) => x.trim());
      if (key === 'RespectIgnoreDifferences') out.respectIgnoreDifferences = value === 'true';
      if (key === 'CreateNamespace') out.createNamespace = value === 'true';
      if (key === 'ApplyOutOfSyncOnly') out.applyOutOfSyncOnly = value === 'true';
      if (key === 'FailOnSharedResource') out.failOnSharedResource = value === 'true';
      if (key === 'Replace') out.replace = value === 'true';
      if (key === 'Force') out.force = value === 'true';
      if (key === 'PruneLast') out.pruneLast = value === 'true';
      if (key === 'Validate') out.validate = value === 'true';
      if (key === 'ServerSideApply') out.serverSideApply = value === 'true';
      if (
        key === 'PrunePropagationPolicy' &&
        (value === 'foreground' || value === 'background' || value === 'orphan')
      )
        out.prunePropagationPolicy = value;
    }
  const meta = asObject(o['managedNamespaceMetadata']);
  if (out.createNamespace && meta)
    out.managedNamespaceMetadata = {
      labels: stringMap(meta['labels']),
      annotations: stringMap(meta['annotations']),
    };
  return out;
}

function stringMap(v: unknown): Record<string, string> {
  return Object.fromEntries(
    Object.entries(asObject(v) ?? {}).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
}
