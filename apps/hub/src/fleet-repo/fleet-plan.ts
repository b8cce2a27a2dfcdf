import { canonicalJson } from '@flotilla/manifests';
import { type FleetKind, type FleetObject, type FleetObjectSource } from '@flotilla/fleet-config';

/**
 * A fleet repository's health rule as the plan and FleetManaged hold it: named by its key
 * (`cert-manager.io/Certificate`), from its `resource_customizations/…/health.lua`.
 */
export type HealthRuleObject = FleetObjectSource & { kind: 'HealthRule'; object: { script: string } };

/** What one commit declares: the fleet's YAML objects and its health rules. */
export type PlannedObject = FleetObject | HealthRuleObject;

/** What a fleet source manages now, as recorded (FleetManaged rows). */
export interface ManagedEntry {
  kind: string;
  name: string;
  fleetSourceId: string;
  file: string;
  object: unknown;
  /** Edited through the API under a break-glass: rewritten from Git by the next reconcile. */
  divergedAt?: Date | null;
}

/** What applying one commit changes: objects to create, update (content or file moved) and delete. */
export interface FleetPlan {
  create: PlannedObject[];
  update: PlannedObject[];
  unchanged: PlannedObject[];
  delete: ManagedEntry[];
  /** Objects another fleet source already manages: the commit is refused, naming both. */
  conflicts: { object: PlannedObject; owner: ManagedEntry }[];
}

export const keyOf = (kind: string, name: string): string => `${kind}/${name}`;

/**
 * Compares a commit's valid objects with what this source manages (and what other sources manage).
 * Pure: the reconciler applies the plan in one transaction.
 */
export function planFleet(
  sourceId: string,
  desired: readonly PlannedObject[],
  managed: readonly ManagedEntry[],
): FleetPlan {
  const byKey = new Map(managed.map((m) => [keyOf(m.kind, m.name), m]));
  const plan: FleetPlan = { create: [], update: [], unchanged: [], delete: [], conflicts: [] };
  const wanted = new Set<string>();
  for (const o of desired) {
    const key = keyOf(o.kind, o.name);
    wanted.add(key);
    const current = byKey.get(key);
    if (!current) plan.create.push(o);
    else if (current.fleetSourceId !== sourceId) plan.conflicts.push({ object: o, owner: current });
    else if (
      current.divergedAt ||
      current.file !== o.file ||
      canonicalJson(current.object) !== canonicalJson(o.object)
    )
      plan.update.push(o);
    else plan.unchanged.push(o);
  }
  plan.delete = managed.filter((m) => m.fleetSourceId === sourceId && !wanted.has(keyOf(m.kind, m.name)));
  return plan;
}

/** Kinds in the order they are applied: what others reference first. */
export const APPLY_ORDER: readonly (FleetKind | 'HealthRule')[] = [
  'HealthRule',
  'ClusterGroup',
  'Project',
  'SyncWindow',
  'RolloutStrategy',
  'SourceVerification',
  'ApplicationSet',
  'NotificationPolicy',
];
