import { Injectable } from '@nestjs/common';
import type {
  Assignment,
  AssignmentPolicies,
  AssignmentsResponse,
  HealthRule,
  ProjectRestrictions,
  SyncOperation,
} from '@flotilla/contract';
import { restrictionsFor, type ProjectSpec } from '@flotilla/fleet-config';
import { windowsForTarget, type NamedSyncWindow } from '@flotilla/windows';
import { Database } from '../db/database.js';
import { assignmentSyncSettingsOf } from '../desired-state/sync-policy.js';
import { specOfRow } from '../projects/project-policy.service.js';
import { WindowsService } from '../release/windows/windows.service.js';
import { AdmissionPolicies, type FleetPolicySet } from '../release/policies/admission-policies.service.js';
import { BreakGlassService } from '../break-glass/break-glass.service.js';
import { PendingOperations, type ClusterOperations } from '../operations/pending-operations.service.js';
import { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';
import { HealthRulesService } from '../health-rules/health-rules.service.js';
import { BurstSharedRead } from './burst-shared-read.js';
import { AutoRollbackSettings } from './auto-rollback-settings.service.js';
import { etagOf } from './etag.js';
import { TickBatcher } from '../common/tick-batcher.js';
import {
  nextPinExpiry,
  readAssignedClusters,
  servedTargets,
  tombstonesOf,
  type AssignedCluster,
  type ServedTarget,
} from './assigned-targets.js';

/**
 * An assignments ETag this replica computed is trusted without reading the database until a wake-up
 * for the cluster arrives, the cluster row changes, a pin or break-glass in it expires, or this long
 * passes (a safety net for a change made without a wake-up).
 */
export const KNOWN_ETAG_MAX_AGE_MS = 5 * 60_000;

/** What a replica remembers of the last assignments it computed for a cluster. */
interface KnownEtag {
  etag: string;
  /** ClusterWakeups.stamp() taken before the computation read anything. */
  stamp: number;
  clusterUpdatedMs: number;
  validUntil: number;
  /** The bundle digests that answer serves (targets and tombstones): the bundles the agent fetches next. */
  digests: ReadonlySet<string>;
}

/** A break-glass override as an assignment carries it. */
type BreakGlassOverride = Assignment['breakGlass'][number];

/** What every assignment of one computation draws from, besides its own target row. */
interface AssignmentInputs {
  clusterName: string;
  namedWindows: NamedSyncWindow[];
  overrides: Map<string, BreakGlassOverride[]>;
  rollbackOf: Map<string, Pick<Assignment, 'autoRollback'>>;
  projectOf: (project: string) => { project?: ProjectRestrictions };
  operations: Map<string, SyncOperation[]>;
  policiesOf: (project: string, appSet: string) => { policies?: AssignmentPolicies };
}

/** Whose assignments a long-poll asks for. */
interface AssignmentsKey {
  clusterId: string;
  clusterName: string;
}

/** What every cluster's assignments draw from, whoever it is. */
interface FleetWideInputs {
  projectSpecs: Map<string, ProjectSpec>;
  namedWindows: NamedSyncWindow[];
  healthRules: HealthRule[];
  fleetPolicies: FleetPolicySet;
}

/**
 * Computations asked for within this many ms share their statements: the wake-ups of one release
 * reach a replica over a few ms, each waking its long-polls; a lone poll waits this much longer.
 */
export const ASSIGNMENTS_BATCH_TICK_MS = 5;
/** Clusters computed together at most (their targets are read in one statement). */
export const ASSIGNMENTS_BATCH_MAX = 250;

/**
 * The desired set of one cluster, as its agent pulls it (registration: AgentRegistration; bundles:
 * AgentBundles; last seen: ClusterLastSeen), and the ETag this replica remembers of it.
 */
@Injectable()
export class AgentGatewayService {
  private readonly known = new Map<string, KnownEtag>();

  constructor(
    private readonly db: Database,
    private readonly windows: WindowsService,
    private readonly breakGlass: BreakGlassService,
    private readonly wakeups: ClusterWakeups,
    private readonly operations: PendingOperations,
    private readonly autoRollback: AutoRollbackSettings,
    healthRules: HealthRulesService,
    admissionPolicies: AdmissionPolicies,
  ) {
    this.namedWindows = new BurstSharedRead(() => this.windows.named(), wakeups);
    this.fleetPolicies = new BurstSharedRead(() => admissionPolicies.current(), wakeups);
    this.projectSpecs = new BurstSharedRead(() => this.readProjectSpecs(), wakeups);
    this.healthRules = new BurstSharedRead(() => healthRules.forAgents(), wakeups);
    this.batch = new TickBatcher((keys) => this.computeBatch(keys), {
      tickMs: ASSIGNMENTS_BATCH_TICK_MS,
      maxBatchSize: ASSIGNMENTS_BATCH_MAX,
    });
  }

  /** The computations asked for within one tick, computed together. */
  private readonly batch: TickBatcher<AssignmentsKey, AssignmentsResponse>;

  /**
   * Named sync windows, stored projects and health rules, read once per burst of computations (see
   * BurstSharedRead).
   */
  private readonly namedWindows: BurstSharedRead<NamedSyncWindow[]>;
  private readonly projectSpecs: BurstSharedRead<Map<string, ProjectSpec>>;
  private readonly healthRules: BurstSharedRead<HealthRule[]>;
  private readonly fleetPolicies: BurstSharedRead<FleetPolicySet>;

  /** Every stored project's spec (a handful of rows; the implicit `default` is absent unless stored). */
  private async readProjectSpecs(): Promise<Map<string, ProjectSpec>> {
    const rows = await this.db.sql.query<{ name: string; document: unknown }>(
      `SELECT name, document FROM "Project"`,
    );
    return new Map(rows.map((r) => [r.name, specOfRow(r.document)]));
  }

  /**
   * The cluster's complete desired set and its ETag. Computations asked for within one short tick
   * (the long-polls a release woke) are computed together: a few set-based statements for all of
   * them, then each cluster's answer in memory (see computeBatch).
   */
  assignments(clusterId: string, clusterName: string): Promise<AssignmentsResponse> {
    return this.batch.load({ clusterId, clusterName });
  }

  /**
   * The assignments of a burst of clusters, each exactly what a computation of that cluster alone
   * gives. Two rounds of statements for all of them: the cluster rows and their served targets
   * (only the columns the answer needs) with their pending operations; then break-glass and the
   * automatic-rollback strategies their targets need. A failed statement fails every caller.
   */
  private async computeBatch(keys: readonly AssignmentsKey[]): Promise<(AssignmentsResponse | Error)[]> {
    // Taken before reading: a wake-up landing while this runs makes the remembered ETags stale.
    const stamp = this.wakeups.stamp();
    const now = Date.now();
    const ids = keys.map((k) => k.clusterId);
    const [clusters, operations] = await Promise.all([
      readAssignedClusters(this.db, ids),
      this.operations.pendingForClusters(ids, new Date(now)),
    ]);
    const served = new Map([...clusters].map(([id, c]) => [id, servedTargets(c.targets, now)]));
    const nameOf = new Map(keys.map((k) => [k.clusterId, k.clusterName]));
    const everyTarget = [...served].flatMap(([id, ts]) =>
      ts.filter((t) => t.deletionId === null).map((t) => ({ ...t, clusterName: nameOf.get(id) ?? '' })),
    );
    const [overrides, shared] = await Promise.all([
      // Sync windows and break-glass travel in the assignment, so the ETag changes when they do.
      this.breakGlass.activeFor(
        everyTarget.map((t) => ({ name: t.name, clusterName: t.clusterName, appSetName: t.appSetName })),
        new Date(now),
      ),
      Promise.all(keys.map((k) => this.fleetWide(k.clusterId))),
      this.autoRollback.refresh(
        everyTarget.map((t) => ({ appSetId: t.appSetId, appSetVersion: t.appSetUpdatedMs })),
      ),
    ]);
    return Promise.all(
      keys.map(async (key, i) => {
        try {
          const cluster = clusters.get(key.clusterId) as AssignedCluster;
          const inputs = { overrides, shared: shared[i] as FleetWideInputs, operations };
          return await this.answer(key, cluster, served.get(key.clusterId) ?? [], inputs, { stamp, now });
        } catch (e) {
          return e instanceof Error ? e : new Error(String(e));
        }
      }),
    );
  }

  /**
   * One cluster's answer from what its burst read, remembered with its ETag under the burst's
   * stamp (a wake-up after it makes the ETag stale).
   */
  private async answer(
    key: AssignmentsKey,
    cluster: AssignedCluster,
    served: ServedTarget[],
    read: {
      overrides: Map<string, BreakGlassOverride[]>;
      shared: FleetWideInputs;
      operations: Map<string, ClusterOperations>;
    },
    at: { stamp: number; now: number },
  ): Promise<AssignmentsResponse> {
    const { clusterId, clusterName } = key;
    const { now } = at;
    // A pin's expiry changes the answer without a wake-up until the sweep runs: remember until then.
    let validUntil = Math.min(now + KNOWN_ETAG_MAX_AGE_MS, nextPinExpiry(cluster.targets, now));
    const targets = served.filter((t) => t.deletionId === null);
    const deletions = tombstonesOf(served);
    const operations = read.operations.get(clusterId);
    // An operation that expires unrun leaves the answer then, without a wake-up.
    if (operations?.nextExpiry !== undefined) validUntil = Math.min(validUntil, operations.nextExpiry);
    const labels = cluster.labels;
    const inputs: AssignmentInputs = {
      clusterName,
      namedWindows: read.shared.namedWindows,
      overrides: read.overrides,
      rollbackOf: await this.autoRollback.byAppSet(
        targets.map((t) => ({ appSetId: t.appSetId, appSetVersion: t.appSetUpdatedMs })),
        labels,
      ),
      projectOf: projectRestrictions(read.shared.projectSpecs, { name: clusterName, labels }),
      operations: operations?.byTarget ?? new Map<string, SyncOperation[]>(),
      policiesOf: targetPolicies(read.shared.fleetPolicies, labels),
    };
    const assignments = targets.map((t) => assignmentOf(t, inputs));
    for (const a of assignments)
      for (const b of a.breakGlass) validUntil = Math.min(validUntil, Date.parse(b.expiresAt));
    const healthRules = read.shared.healthRules;
    // Health rules are in the ETag: a changed rule reaches agents as a new revision does. Tombstones
    // count only when there are some, so every other cluster's ETag stays as it was.
    const etag = etagOf(
      deletions.length > 0 ? { assignments, healthRules, deletions } : { assignments, healthRules },
    );
    const digests = new Set(served.map((t) => t.served.bundleDigest));
    this.known.set(clusterId, {
      etag,
      stamp: at.stamp,
      clusterUpdatedMs: cluster.updatedMs,
      validUntil,
      digests,
    });
    return { clusterName, etag, assignments, healthRules, ...(deletions.length > 0 && { deletions }) };
  }

  /** The fleet-wide inputs, each read once per burst (see BurstSharedRead) and judged per cluster. */
  private async fleetWide(clusterId: string): Promise<FleetWideInputs> {
    const [projectSpecs, namedWindows, healthRules, fleetPolicies] = await Promise.all([
      this.projectSpecs.get(clusterId),
      this.namedWindows.get(clusterId),
      // Fleet-wide: every cluster gets every rule (a rule only judges objects of its kind).
      this.healthRules.get(clusterId),
      this.fleetPolicies.get(clusterId),
    ]);
    return { projectSpecs, namedWindows, healthRules, fleetPolicies };
  }

  /**
   * The ETag of the cluster's assignments when this replica knows it is still current without reading
   * anything: computed here, no wake-up for the cluster since (any replica's change publishes one),
   * the cluster row unchanged (labels pick rollout steps and project rules), and no pin or break-glass
   * in it expired. Undefined otherwise: compute them.
   */
  knownEtag(cluster: { id: string; updatedAt: Date }, now = Date.now()): string | undefined {
    const k = this.known.get(cluster.id);
    if (!k) return undefined;
    if (
      now >= k.validUntil ||
      k.clusterUpdatedMs !== cluster.updatedAt.getTime() ||
      this.wakeups.wokenSince(cluster.id, k.stamp)
    ) {
      this.known.delete(cluster.id);
      return undefined;
    }
    return k.etag;
  }

  /**
   * The bundle digests the cluster's assignments serve, when this replica knows them to be current
   * (as `knownEtag` judges it); undefined otherwise. An agent fetches its bundles right after its
   * long-poll is answered: these are exactly the ones it may read, without asking the database.
   */
  knownDigests(cluster: { id: string; updatedAt: Date }, now = Date.now()): ReadonlySet<string> | undefined {
    return this.knownEtag(cluster, now) === undefined ? undefined : this.known.get(cluster.id)?.digests;
  }
}

/**
 * Each target's project narrowed to this cluster (once per project); the agent refuses objects
 * outside it. Projects not stored (the implicit `default`) get no `project`, which the agent reads
 * as unrestricted.
 */
function projectRestrictions(
  specs: Map<string, ProjectSpec>,
  cluster: { name: string; labels: Record<string, string> },
): (project: string) => { project?: ProjectRestrictions } {
  const restrictions = new Map<string, ProjectRestrictions | undefined>();
  return (name) => {
    if (!restrictions.has(name)) {
      const spec = specs.get(name);
      restrictions.set(name, spec && restrictionsFor(name, spec, cluster));
    }
    const project = restrictions.get(name);
    return project ? { project } : {};
  };
}

/**
 * The admission policies of each (project, appset) on this cluster, scoped once per pair: what the
 * hub judged the bundle with, for the agent to judge again. None apply: no `policies` key, so an
 * assignment (and its ETag) is the same as before policies existed.
 */
function targetPolicies(
  fleet: FleetPolicySet,
  clusterLabels: Record<string, string>,
): (project: string, appSet: string) => { policies?: AssignmentPolicies } {
  const scoped = new Map<string, { policies?: AssignmentPolicies }>();
  return (project, appSet) => {
    const key = JSON.stringify([project, appSet]);
    let out = scoped.get(key);
    if (!out) {
      const p = AdmissionPolicies.forTarget(fleet, { project, appSet, clusterLabels });
      out =
        p.documents.length > 0
          ? { policies: { documents: p.documents, params: p.params } as AssignmentPolicies }
          : {};
      scoped.set(key, out);
    }
    return out;
  };
}

/** One target's assignment (its keys in this order: the ETag hashes the JSON). */
function assignmentOf(t: ServedTarget, inputs: AssignmentInputs): Assignment {
  return {
    targetId: t.id,
    name: t.name,
    appSet: t.appSetName,
    namespace: t.namespace,
    revision: t.served.revision,
    bundleDigest: t.served.bundleDigest,
    // Target.syncPolicy holds the template's ignore rules too (see appsets/sync-policy.ts).
    ...assignmentSyncSettingsOf(t.syncPolicy),
    ...inputs.rollbackOf.get(t.appSetId),
    ...inputs.projectOf(t.project),
    windows: windowsForTarget(inputs.namedWindows, {
      application: t.name,
      namespace: t.namespace,
      cluster: inputs.clusterName,
      project: t.project,
    }).map((w) => ({ name: w.name, ...w.window })),
    breakGlass: inputs.overrides.get(t.name) ?? [],
    operations: inputs.operations.get(t.id) ?? [],
    ...inputs.policiesOf(t.project, t.appSetName),
  };
}
