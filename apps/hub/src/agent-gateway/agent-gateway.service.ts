import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import {
  type Assignment,
  type AssignmentsResponse,
  type Bundle,
  type RegisterRequest,
  type RegisterResponse,
} from '@flotilla/contract';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import { hashSecret, newSecret } from '../common/secrets.js';
import { AuditLog } from '../audit/audit.service.js';
import { rolloutStrategyOf } from '../rollouts/rollout-strategy.js';
import { assignmentSyncSettingsOf } from '../appsets/sync-policy.js';
import { compileSelector } from '@flotilla/generators';
import { asRecord } from '../common/json.js';
import { ProjectPolicy } from '../projects/project-policy.service.js';
import { windowsForTarget } from '@flotilla/windows';
import { WindowsService } from '../windows/windows.service.js';
import { BreakGlassService } from '../break-glass/break-glass.service.js';

/** Registration, the desired set of one cluster, and bundles: the pull side of the protocol. */
@Injectable()
export class AgentGatewayService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
    private readonly projects: ProjectPolicy,
    private readonly windows: WindowsService,
    private readonly breakGlass: BreakGlassService,
  ) {}

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

  async assignments(clusterId: string, clusterName: string): Promise<AssignmentsResponse> {
    // Agents get what is released (or pinned), never straight what Git wants: see rollouts/.
    const now = new Date();
    const targets = (
      await this.db.prisma.target.findMany({
        where: { clusterId, OR: [{ releasedDigest: { not: null } }, { pin: { isNot: null } }] },
        orderBy: { name: 'asc' },
        include: { appSet: { select: { name: true, project: true, spec: true } }, pin: true },
      })
    )
      .map((t) => ({ ...t, served: servedRevision(t, now) }))
      .filter((t) => t.served.bundleDigest !== '');
    // Each target's project narrowed to this cluster; the agent refuses objects outside it.
    const cluster = await this.db.prisma.cluster.findUnique({
      where: { id: clusterId },
      select: { labels: true },
    });
    const restrictions = await this.projects.restrictionsFor(
      targets.map((t) => t.appSet.project),
      { name: clusterName, labels: asRecord(cluster?.labels) },
    );
    const projectOf = (name: string) => {
      const project = restrictions.get(name);
      return project ? { project } : {};
    };
    // Sync windows and break-glass travel in the assignment, so the ETag changes when they do.
    const namedWindows = await this.windows.named();
    const overrides = await this.breakGlass.activeFor(
      clusterName,
      targets.map((t) => ({ name: t.name, clusterName, appSetName: t.appSet.name })),
    );
    const assignments: Assignment[] = targets.map((t) => ({
      targetId: t.id,
      name: t.name,
      appSet: t.appSet.name,
      namespace: t.namespace,
      revision: t.served.revision,
      bundleDigest: t.served.bundleDigest,
      // Target.syncPolicy holds the template's ignore rules too (see appsets/sync-policy.ts).
      ...assignmentSyncSettingsOf(t.syncPolicy),
      ...autoRollbackOf(t.appSet.spec, asRecord(cluster?.labels)),
      ...projectOf(t.appSet.project),
      windows: windowsForTarget(namedWindows, {
        application: t.name,
        namespace: t.namespace,
        cluster: clusterName,
      }).map((w) => w.window),
      breakGlass: overrides.get(t.name) ?? [],
    }));
    const etag = `"${createHash('sha256').update(JSON.stringify(assignments)).digest('hex').slice(0, 32)}"`;
    return { clusterName, etag, assignments };
  }

  async touch(clusterId: string): Promise<void> {
    await this.db.prisma.cluster.update({ where: { id: clusterId }, data: { lastSeenAt: new Date() } });
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
}

/** A pin (unexpired) wins over the release; a target with neither is not served. */
function servedRevision(
  t: {
    releasedRevision: string | null;
    releasedDigest: string | null;
    pin: { revision: string; bundleDigest: string; expiresAt: Date | null } | null;
  },
  now: Date,
): { revision: string; bundleDigest: string } {
  if (t.pin && (t.pin.expiresAt === null || t.pin.expiresAt > now))
    return { revision: t.pin.revision, bundleDigest: t.pin.bundleDigest };
  return { revision: t.releasedRevision ?? '', bundleDigest: t.releasedDigest ?? '' };
}

/**
 * With a rollout strategy the agent may roll a failed revision back on its own, once the progress
 * deadline of the step that picks its cluster has passed.
 */
function autoRollbackOf(
  spec: unknown,
  clusterLabels: Record<string, string>,
): Pick<Assignment, 'autoRollback'> {
  let strategy;
  try {
    strategy = rolloutStrategyOf(spec);
  } catch {
    return {}; // refused when stored; an older document simply gets no automatic rollback
  }
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
