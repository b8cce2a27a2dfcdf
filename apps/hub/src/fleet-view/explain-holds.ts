// What holds a target back, as explain tells it: the appset's latest expansion, an unstored target, a non-deterministic render, an admission policy, sync windows, break-glass.
import {
  policyDenialSchema,
  type BreakGlass as BreakGlassOverride,
  type ExplainHoldView,
} from '@flotilla/contract';
import type { TargetWindowStatus } from '@flotilla/windows';
import { storedErrorText } from '../common/json.js';

/** Holds on every target of the appset: a held expansion (deletion guard) or a failed one. */
export function appSetHolds(appSet: {
  status: string;
  error: unknown;
  pendingMessage: string | undefined;
}): ExplainHoldView[] {
  const holds: ExplainHoldView[] = [];
  if (appSet.status === 'Held') {
    holds.push({
      kind: 'deletion-guard',
      message:
        appSet.pendingMessage ??
        'the deletion guard holds the latest expansion: the targets stay as they were until it is confirmed',
    });
  }
  if (appSet.status === 'Error') {
    holds.push({
      kind: 'appset-error',
      message: `the latest expansion failed, so targets keep their previous state: ${storedErrorText(appSet.error)}`,
    });
  }
  return holds;
}

/** What holds one generated target besides its appset's holds. */
export function targetHolds(t: {
  stored: boolean;
  source: Record<string, unknown>;
  resolvedRevision: string | null;
  render: { deterministic: boolean } | null;
  window: TargetWindowStatus;
  breakGlass: BreakGlassOverride[];
  /** The stored target's bundle and the admission policies' denial of it, if any. */
  policy?: { bundleDigest: string | null; policyDenial: unknown };
}): ExplainHoldView[] {
  const holds: ExplainHoldView[] = [];
  if (!t.stored) {
    holds.push({
      kind: 'not-expanded',
      message: 'no target is stored for it yet: the appset has not been expanded since it matched',
    });
  }
  if (t.render && !t.render.deterministic) {
    holds.push({
      kind: 'render',
      message: `rendering ${typeof t.source['path'] === 'string' ? t.source['path'] || '.' : '.'} at ${t.resolvedRevision?.slice(0, 12)} is not deterministic; the render is refused`,
    });
  }
  const denial = policyDenialSchema.safeParse(t.policy?.policyDenial);
  // The same rule as the reason PolicyDenied: only a denial of the bundle Git wants now holds it.
  if (denial.success && denial.data.digest === t.policy?.bundleDigest) {
    const d = denial.data;
    holds.push({
      kind: 'admission-policy',
      message: `policy ${d.policy} (binding ${d.binding}) denies ${d.object.kind} ${d.object.namespace ? `${d.object.namespace}/` : ''}${d.object.name}: ${d.message}; ${d.revision.slice(0, 12)} is not released (${d.denials} denial${d.denials === 1 ? '' : 's'} in all)`,
    });
  }
  const bypass = t.breakGlass.some((b) => b.allowSyncOutsideWindows);
  if (!t.window.canSync && !bypass) {
    holds.push({
      kind: 'sync-window',
      message: `automatic syncs are closed${t.window.active.length > 0 ? ` by ${t.window.active.join(', ')}` : ' (no allow window is active)'}; next open ${t.window.nextOpen?.toISOString() ?? 'not within the horizon'}`,
    });
  }
  for (const b of t.breakGlass) {
    holds.push({
      kind: 'break-glass',
      message: `break-glass ${b.id} until ${b.expiresAt}: ${b.reason}${b.allowSyncOutsideWindows ? ' (syncs outside windows allowed)' : ''}${b.pauseSelfHeal ? ' (self-heal paused)' : ''}`,
    });
  }
  return holds;
}
