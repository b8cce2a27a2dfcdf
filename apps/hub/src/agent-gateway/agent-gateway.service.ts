import { createHash } from 'node:crypto';
import { type BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import {
  type Assignment,
  type AssignmentsResponse,
  type Bundle,
  type HealthRule,
  type ProjectRestrictions,
  type RegisterRequest,
  type RegisterResponse,
  type TargetDeletion,
} from '@flotilla/contract';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import { hashSecret, newSecret } from '../common/secrets.js';
import { AuditLog } from '../audit/audit.service.js';
import { rolloutStrategyOf, type RolloutStrategy } from '../desired-state/rollout-strategy.js';
import { assignmentSyncSettingsOf } from '../desired-state/sync-policy.js';
import { compileSelector } from '@flotilla/generators';
import { asRecord } from '../common/json.js';
import { specOfRow } from '../projects/project-policy.service.js';
import { restrictionsFor, type ProjectSpec } from '@flotilla/fleet-config';
import { windowsForTarget, type NamedSyncWindow } from '@flotilla/windows';
import { WindowsService } from '../release/windows/windows.service.js';
import { BreakGlassService } from '../break-glass/break-glass.service.js';
import { PendingOperations } from '../operations/pending-operations.service.js';
import { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';
import { HealthRulesService } from '../health-rules/health-rules.service.js';
import { BurstSharedRead } from './burst-shared-read.js';

/**
 * `Cluster.lastSeenAt` is written at most this often per cluster: a request finding it older marks
 * the cluster seen, and every this-many seconds one UPDATE marks every cluster holding a long-poll on
 * this replica. So "last seen" is the last time the hub heard from the agent, within about this long.
 */
export const LAST_SEEN_EVERY_MS = 15_000;
/** Clusters marked seen are written together, one UPDATE at most this long after the request. */
const LAST_SEEN_FLUSH_MS = 1_000;
/**
 * An assignments ETag this replica computed is trusted without reading the database until a wake-up
 * for the cluster arrives, the cluster row changes, a pin or break-glass in it expires, or this long
 * passes (a safety net for a change made without a wake-up).
 */
export const KNOWN_ETAG_MAX_AGE_MS = 5 * 60_000;

/** One target row as `assignments` reads it: only the columns the answer needs. */
interface AssignedTargetRow {
  id: string;
  name: string;
  namespace: string;
  syncPolicy: unknown;
  releasedRevision: string | null;
  releasedDigest: string | null;
  appSetId: string;
  appSetName: string;
  project: string;
  appSetUpdatedMs: number;
  hasPin: boolean;
  pinRevision: string | null;
  pinDigest: string | null;
  pinExpiresMs: number | null;
  deletionId: string | null;
  deletionState: string | null;
}

/** What a replica remembers of the last assignments it computed for a cluster. */
interface KnownEtag {
  etag: string;
  /** ClusterWakeups.stamp() taken before the computation read anything. */
  stamp: number;
  clusterUpdatedMs: number;
  validUntil: number;
}

/** Registration, the desired set of one cluster, and bundles: the pull side of the protocol. */
@Injectable()
export class AgentGatewayService implements BeforeApplicationShutdown {
  private readonly logger = new Logger(AgentGatewayService.name);
  /** Parsed `spec.rollout` per appset, valid while the appset's updatedAt is unchanged. */
  private readonly strategies = new Map<string, { updatedMs: number; strategy: RolloutStrategy | null }>();
  private readonly known = new Map<string, KnownEtag>();
  /** Clusters seen since the last write of lastSeenAt, with when. */
  private readonly seen = new Map<string, number>();
  private flushTimer: NodeJS.Timeout | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
    private readonly windows: WindowsService,
    private readonly breakGlass: BreakGlassService,
    private readonly wakeups: ClusterWakeups,
    private readonly operations: PendingOperations,
    healthRules: HealthRulesService,
  ) {
    this.namedWindows = new BurstSharedRead(() => this.windows.named(), wakeups);
    this.projectSpecs = new BurstSharedRead(() => this.readProjectSpecs(), wakeups);
    this.healthRules = new BurstSharedRead(() => healthRules.forAgents(), wakeups);
  }

  /**
   * Named sync windows, stored projects and health rules, read once per burst of computations (see
   * BurstSharedRead).
   */
  private readonly namedWindows: BurstSharedRead<NamedSyncWindow[]>;
  private readonly projectSpecs: BurstSharedRead<Map<string, ProjectSpec>>;
  private readonly healthRules: BurstSharedRead<HealthRule[]>;

  /** Every stored project's spec (a handful of rows; the implicit `default` is absent unless stored). */
  private async readProjectSpecs(): Promise<Map<string, ProjectSpec>> {
    const rows = await this.db.sql.query<{ name: string; document: unknown }>(
      `SELECT name, document FROM "Project"`,
    );
    return new Map(rows.map((r) => [r.name, specOfRow(r.document)]));
  }

  /** Trades a bootstrap token for a credential. Any problem is a 401 and changes nothing. */
  async register(req: RegisterRequest): Promise<RegisterResponse> {
    const token = await this.db.prisma.bootstrapToken.findUnique({
      where: { tokenHash: hashSecret(req.bootstrapToken) },
      include: { cluster: true },
    });
    if (!token)
      throw new HubError(
        401,
        'bootstrap-token-invalid',
        'the bootstrap token is not known to this hub; ask an admin for a new one',
        'bootstrapToken',
      );
    if (token.cluster.name !== req.clusterName) {
      throw new HubError(
        401,
        'bootstrap-token-invalid',
        `the bootstrap token was issued for another cluster, not "${req.clusterName}"`,
        'clusterName',
      );
    }
    if (token.usedAt) {
      throw new HubError(
        401,
        'bootstrap-token-used',
        `the bootstrap token was already used at ${token.usedAt.toISOString()}; tokens are single-use, ask an admin for a new one`,
        'bootstrapToken',
      );
    }
    if (token.expiresAt.getTime() <= Date.now()) {
      throw new HubError(
        401,
        'bootstrap-token-expired',
        `the bootstrap token expired at ${token.expiresAt.toISOString()}; ask an admin for a new one`,
        'bootstrapToken',
      );
    }
    const credential = newSecret('fla');
    const ttl = this.config.auth.credentialTtlSeconds;
    const expiresAt = ttl > 0 ? new Date(Date.now() + ttl * 1000) : null;
    await this.db.prisma.$transaction(async (tx) => {
      // Claim the token only if still unused: two agents racing with one token, one wins.
      const claimed = await tx.bootstrapToken.updateMany({
        where: { id: token.id, usedAt: null },
        data: { usedAt: new Date() },
      });
      if (claimed.count !== 1) {
        throw new HubError(
          401,
          'bootstrap-token-used',
          'the bootstrap token was just used by another registration',
          'bootstrapToken',
        );
      }
      await tx.cluster.update({
        where: { id: token.clusterId },
        data: {
          credentialHash: hashSecret(credential),
          credentialExpiresAt: expiresAt,
          credentialRevokedAt: null,
          previousCredentialHash: null,
          previousCredentialValidUntil: null,
          registeredAt: new Date(),
          agentVersion: req.agentVersion ?? null,
          lastSeenAt: new Date(),
        },
      });
      await this.audit.record(
        {
          actor: `agent:${req.clusterName}`,
          action: 'cluster.registered',
          scope: `cluster:${req.clusterName}`,
          details: { agentVersion: req.agentVersion ?? null },
        },
        tx,
      );
    });
    return {
      clusterId: token.clusterId,
      clusterName: token.cluster.name,
      credential,
      expiresAt: expiresAt?.toISOString() ?? null,
    };
  }

  /**
   * The cluster's complete desired set and its ETag. Two statements read the cluster and its served
   * targets (only the columns the answer needs); per-appset work (the rollout strategy, parsed once
   * per appset version and kept) is shared by the appset's targets.
   */
  async assignments(clusterId: string, clusterName: string): Promise<AssignmentsResponse> {
    // Taken before reading: a wake-up landing while this runs makes the remembered ETag stale.
    const stamp = this.wakeups.stamp();
    const now = Date.now();
    const [clusterRows, rows] = await Promise.all([
      this.db.sql.query<{ labels: unknown; updatedMs: number }>(
        `SELECT labels, (extract(epoch FROM "updatedAt") * 1000)::float8 AS "updatedMs"
           FROM "Cluster" WHERE id = $1`,
        [clusterId],
      ),
      // Agents get what is released (or pinned), never straight what Git wants: see rollouts/.
      this.db.sql.query<AssignedTargetRow>(
        `SELECT t.id, t.name, t.namespace, t."syncPolicy", t."releasedRevision", t."releasedDigest",
                a.id AS "appSetId", a.name AS "appSetName", a.project,
                (extract(epoch FROM a."updatedAt") * 1000)::float8 AS "appSetUpdatedMs",
                p."targetId" IS NOT NULL AS "hasPin", p.revision AS "pinRevision",
                p."bundleDigest" AS "pinDigest",
                (extract(epoch FROM p."expiresAt") * 1000)::float8 AS "pinExpiresMs",
                t."deletionId", t."deletionState"
           FROM "Target" t
           JOIN "ApplicationSet" a ON a.id = t."appSetId"
           LEFT JOIN "TargetPin" p ON p."targetId" = t.id
          WHERE t."clusterId" = $1 AND (t."releasedDigest" IS NOT NULL OR p."targetId" IS NOT NULL)
          ORDER BY t.name`,
        [clusterId],
      ),
    ]);
    const clusterLabels = asRecord(clusterRows[0]?.labels);
    // A pin's expiry changes the answer without a wake-up until the sweep runs: remember until then.
    let validUntil = now + KNOWN_ETAG_MAX_AGE_MS;
    const served = rows
      .map((t) => {
        if (t.pinExpiresMs !== null && t.pinExpiresMs > now)
          validUntil = Math.min(validUntil, t.pinExpiresMs);
        return { ...t, served: servedRevision(t, now) };
      })
      .filter((t) => t.served.bundleDigest !== '');
    // A target being deleted is no longer synced: its agent gets a tombstone naming the bundle it
    // last served instead. One whose deletion failed gets neither: left as it is until asked again.
    const targets = served.filter((t) => t.deletionId === null);
    const deletions: TargetDeletion[] = served
      .filter((t) => t.deletionId !== null && t.deletionState === 'Pending')
      .map((t) => {
        const policy = assignmentSyncSettingsOf(t.syncPolicy).syncPolicy.prunePropagationPolicy;
        return {
          id: t.deletionId as string,
          targetId: t.id,
          name: t.name,
          namespace: t.namespace,
          bundleDigest: t.served.bundleDigest,
          ...(policy && { prunePropagationPolicy: policy }),
        };
      });
    // Each target's project narrowed to this cluster; the agent refuses objects outside it.
    const [projectSpecs, namedWindows, overrides, rollbackOf, operations, operationExpiry, healthRules] =
      await Promise.all([
        this.projectSpecs.get(clusterId),
        // Sync windows and break-glass travel in the assignment, so the ETag changes when they do.
        this.namedWindows.get(clusterId),
        this.breakGlass.activeFor(
          targets.map((t) => ({ name: t.name, clusterName, appSetName: t.appSetName })),
          new Date(now),
        ),
        this.autoRollbackByAppSet(targets, clusterLabels),
        this.operations.pendingFor(clusterId, new Date(now)),
        this.operations.nextExpiry(clusterId, new Date(now)),
        // Fleet-wide: every cluster gets every rule (a rule only judges objects of its kind).
        this.healthRules.get(clusterId),
      ]);
    // An operation that expires unrun leaves the answer then, without a wake-up.
    if (operationExpiry !== undefined) validUntil = Math.min(validUntil, operationExpiry);
    // Projects not stored (the implicit `default`) get no `project`, which the agent reads as unrestricted.
    const restrictions = new Map<string, ProjectRestrictions | undefined>();
    const projectOf = (name: string) => {
      if (!restrictions.has(name)) {
        const spec = projectSpecs.get(name);
        restrictions.set(
          name,
          spec && restrictionsFor(name, spec, { name: clusterName, labels: clusterLabels }),
        );
      }
      const project = restrictions.get(name);
      return project ? { project } : {};
    };
    const assignments: Assignment[] = targets.map((t) => {
      const breakGlass = overrides.get(t.name) ?? [];
      for (const b of breakGlass) validUntil = Math.min(validUntil, Date.parse(b.expiresAt));
      return {
        targetId: t.id,
        name: t.name,
        appSet: t.appSetName,
        namespace: t.namespace,
        revision: t.served.revision,
        bundleDigest: t.served.bundleDigest,
        // Target.syncPolicy holds the template's ignore rules too (see appsets/sync-policy.ts).
        ...assignmentSyncSettingsOf(t.syncPolicy),
        ...rollbackOf.get(t.appSetId),
        ...projectOf(t.project),
        windows: windowsForTarget(namedWindows, {
          application: t.name,
          namespace: t.namespace,
          cluster: clusterName,
          project: t.project,
        }).map((w) => w.window),
        breakGlass,
        operations: operations.get(t.id) ?? [],
      };
    });
    // Health rules are in the ETag: a changed rule reaches agents as a new revision does. Tombstones
    // count only when there are some, so every other cluster's ETag stays as it was.
    const hashed =
      deletions.length > 0 ? { assignments, healthRules, deletions } : { assignments, healthRules };
    const etag = `"${createHash('sha256').update(JSON.stringify(hashed)).digest('hex').slice(0, 32)}"`;
    const clusterUpdatedMs = clusterRows[0]?.updatedMs ?? 0;
    this.known.set(clusterId, { etag, stamp, clusterUpdatedMs, validUntil });
    return { clusterName, etag, assignments, healthRules, ...(deletions.length > 0 && { deletions }) };
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

  /** The automatic-rollback setting per appset for a cluster with these labels. */
  private async autoRollbackByAppSet(
    targets: readonly { appSetId: string; appSetUpdatedMs: number }[],
    clusterLabels: Record<string, string>,
  ): Promise<Map<string, Pick<Assignment, 'autoRollback'>>> {
    const versions = new Map(targets.map((t) => [t.appSetId, t.appSetUpdatedMs]));
    const stale = [...versions]
      .filter(([id, ms]) => this.strategies.get(id)?.updatedMs !== ms)
      .map(([id]) => id);
    if (stale.length > 0) {
      const specs = await this.db.sql.query<{ id: string; spec: unknown; updatedMs: number }>(
        `SELECT id, spec, (extract(epoch FROM "updatedAt") * 1000)::float8 AS "updatedMs"
           FROM "ApplicationSet" WHERE id = ANY($1::text[])`,
        [stale],
      );
      if (this.strategies.size > 10_000) this.strategies.clear();
      for (const a of specs)
        this.strategies.set(a.id, { updatedMs: a.updatedMs, strategy: strategyOrNull(a.spec) });
    }
    const out = new Map<string, Pick<Assignment, 'autoRollback'>>();
    for (const id of versions.keys())
      out.set(id, autoRollbackOf(this.strategies.get(id)?.strategy ?? null, clusterLabels));
    return out;
  }

  /**
   * Marks the cluster seen. Written only when its stored lastSeenAt is older than LAST_SEEN_EVERY_MS,
   * and then together with the other clusters seen meanwhile (one UPDATE per flush, not one per request).
   */
  touch(cluster: { id: string; lastSeenAt: Date | null }, now = Date.now()): void {
    this.refreshTimer ??= setInterval(() => this.markListening(), LAST_SEEN_EVERY_MS).unref();
    const last = cluster.lastSeenAt?.getTime();
    if (last !== undefined && now - last < LAST_SEEN_EVERY_MS) return;
    this.seen.set(cluster.id, Math.max(now, this.seen.get(cluster.id) ?? 0));
    this.flushTimer ??= setTimeout(() => void this.flushSeen(), LAST_SEEN_FLUSH_MS).unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.refreshTimer);
    await this.flushSeen();
  }

  /** An agent holding a long-poll here is connected: it counts as seen now. */
  private markListening(): void {
    const now = Date.now();
    for (const id of this.wakeups.listeningClusterIds()) this.seen.set(id, now);
    void this.flushSeen();
  }

  private flushSeen(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    // One flush at a time, in order: a later one never writes an older time over a newer one.
    this.flushing = this.flushing.then(async () => {
      if (this.seen.size === 0) return;
      const ids = [...this.seen.keys()];
      const at = [...this.seen.values()].map((ms) => new Date(ms).toISOString());
      this.seen.clear();
      try {
        await this.db.sql.query(
          `UPDATE "Cluster" c SET "lastSeenAt" = v.at
             FROM unnest($1::text[], $2::timestamp(3)[]) AS v(id, at)
            WHERE c.id = v.id AND (c."lastSeenAt" IS NULL OR c."lastSeenAt" < v.at)`,
          [ids, at],
        );
      } catch (e) {
        // Only "last seen" is late; the next request or refresh writes it again.
        this.logger.warn(`lastSeenAt of ${ids.length} cluster(s) not written: ${String(e)}`);
      }
    });
    return this.flushing;
  }

  /**
   * Only bundles one of the cluster's targets wants: another cluster's bundle is a 404, not a 403
   * (an agent learns nothing about what else exists), and the attempt is audited.
   */
  async bundle(cluster: { id: string; name: string }, digest: string): Promise<Bundle> {
    const wanted = await this.db.prisma.target.findFirst({
      where: {
        clusterId: cluster.id,
        OR: [{ releasedDigest: digest }, { pin: { bundleDigest: digest } }],
      },
      select: { id: true },
    });
    const bundle = wanted ? await this.db.prisma.bundle.findUnique({ where: { digest } }) : null;
    if (!bundle) {
      if (!wanted) {
        // Usually a probe; rarely a bundle replaced between the agent's two requests, which
        // `assignedElsewhere: false` and the next assignments poll tell apart.
        const elsewhere = await this.db.prisma.target.count({ where: { bundleDigest: digest } });
        await this.audit.record({
          actor: `agent:${cluster.name}`,
          action: 'agent.access-denied',
          scope: `cluster:${cluster.name}`,
          details: { resource: 'bundle', digest, assignedElsewhere: elsewhere > 0 },
        });
      }
      throw new HubError(404, 'not-found', `bundle ${digest} is not assigned to this cluster`);
    }
    return {
      digest: bundle.digest,
      source: { repoUrl: bundle.repoUrl, revision: bundle.revision, path: bundle.path },
      manifests: bundle.manifests as Bundle['manifests'],
    };
  }

  /**
   * `POST bundles/batch`: the bundles of `digests` this cluster's targets want (released or pinned,
   * the single endpoint's rule), read with one statement, as the response body (JSON text: the stored
   * manifests are spliced in as PostgreSQL prints them, never parsed and printed again here). Digests
   * not served are listed in `refused`; a foreign one is audited as the single endpoint does.
   */
  async bundleBatch(cluster: { id: string; name: string }, digests: readonly string[]): Promise<string> {
    const asked = [...new Set(digests)];
    const rows = await this.db.sql.query<{ digest: string; head: string; manifests: string }>(
      `SELECT b.digest,
              json_build_object('digest', b.digest,
                                'source', json_build_object('repoUrl', b."repoUrl", 'revision', b.revision,
                                                            'path', b.path))::text AS head,
              b.manifests::text AS manifests
         FROM "Bundle" b
        WHERE b.digest = ANY($2::text[])
          AND EXISTS (SELECT 1 FROM "Target" t LEFT JOIN "TargetPin" p ON p."targetId" = t.id
                       WHERE t."clusterId" = $1
                         AND (t."releasedDigest" = b.digest OR p."bundleDigest" = b.digest))`,
      [cluster.id, asked],
    );
    const served = new Set(rows.map((r) => r.digest));
    const refused = asked.filter((d) => !served.has(d));
    if (refused.length > 0) await this.auditRefusedBundles(cluster, refused);
    // head is `{"digest":…,"source":{…}}`: the manifests go in before its closing brace.
    const bundles = rows.map((r) => `${r.head.slice(0, -1)},"manifests":${r.manifests}}`);
    return `{"bundles":[${bundles.join(',')}],"refused":${JSON.stringify(refused)}}`;
  }

  /** Audits the refused digests no target of the cluster wants (a wanted one is only not stored yet). */
  private async auditRefusedBundles(cluster: { id: string; name: string }, refused: string[]): Promise<void> {
    const rows = await this.db.sql.query<{ digest: string; wanted: boolean; elsewhere: boolean }>(
      `SELECT d.digest,
              EXISTS (SELECT 1 FROM "Target" t LEFT JOIN "TargetPin" p ON p."targetId" = t.id
                       WHERE t."clusterId" = $1
                         AND (t."releasedDigest" = d.digest OR p."bundleDigest" = d.digest)) AS wanted,
              EXISTS (SELECT 1 FROM "Target" t WHERE t."bundleDigest" = d.digest) AS elsewhere
         FROM unnest($2::text[]) AS d(digest)`,
      [cluster.id, refused],
    );
    for (const r of rows.filter((x) => !x.wanted)) {
      await this.audit.record({
        actor: `agent:${cluster.name}`,
        action: 'agent.access-denied',
        scope: `cluster:${cluster.name}`,
        details: { resource: 'bundle', digest: r.digest, assignedElsewhere: r.elsewhere },
      });
    }
  }
}

/** A pin (unexpired) wins over the release; a target with neither is not served. */
function servedRevision(
  t: Pick<
    AssignedTargetRow,
    'releasedRevision' | 'releasedDigest' | 'hasPin' | 'pinRevision' | 'pinDigest' | 'pinExpiresMs'
  >,
  now: number,
): { revision: string; bundleDigest: string } {
  if (t.hasPin && (t.pinExpiresMs === null || t.pinExpiresMs > now))
    return { revision: t.pinRevision ?? '', bundleDigest: t.pinDigest ?? '' };
  return { revision: t.releasedRevision ?? '', bundleDigest: t.releasedDigest ?? '' };
}

/** The appset's rollout strategy; null without one, or when the stored document no longer parses. */
function strategyOrNull(spec: unknown): RolloutStrategy | null {
  try {
    return rolloutStrategyOf(spec);
  } catch {
    return null; // refused when stored; an older document simply gets no automatic rollback
  }
}

/**
 * With a rollout strategy the agent may roll a failed revision back on its own, once the progress
 * deadline of the step that picks its cluster has passed.
 */
function autoRollbackOf(
  strategy: RolloutStrategy | null,
  clusterLabels: Record<string, string>,
): Pick<Assignment, 'autoRollback'> {
  if (!strategy) return {};
  const step =
    strategy.steps.find((s, i) => compileSelector(s.selector, `spec.rollout.steps[${i}]`)(clusterLabels)) ??
    strategy.steps.at(-1);
  return step ? { autoRollback: { progressDeadlineSeconds: step.progressDeadlineSeconds } } : {};
}

/** ETag comparison as HTTP does it: a list, weak or strong, or `*`. */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const bare = etag.replace(/^W\//, '');
  return ifNoneMatch
    .split(',')
    .map((s) => s.trim().replace(/^W\//, ''))
    .some((s) => s === '*' || s === bare);
}
