import {
  systemActor,
  type AuditActor,
  type BreakGlass as BreakGlassOverride,
  type BreakGlassRecordView,
  type BreakGlassScope,
  type BreakGlassState,
  type BreakGlassView,
  type DriftReport,
  type Page,
} from '@flotilla/contract';
import { Inject, Injectable } from '@nestjs/common';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import { toJson } from '../common/json.js';
import { AuditLog } from '../audit/audit.service.js';
import { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';
import type { BreakGlass as BreakGlassRow, Prisma } from '../generated/prisma/client.js';
import type { OpenBreakGlass } from './break-glass-input.js';
import { keyPageArgs, keyPageOf, type PageKey, type PageQuery } from '../common/name-page.js';

type Tx = Prisma.TransactionClient;

/** Where a break-glass applies: the cluster, appset or target it names. */
interface TargetScope {
  name: string;
  clusterName: string;
  appSetName: string;
}

/**
 * Break-glass overrides: opened with a reason and an expiry (at most BREAK_GLASS_MAX_MINUTES),
 * closed by a person or swept at expiry. The agents of the clusters in scope are woken on every
 * change, since the override travels in their assignments. All audited.
 */
@Injectable()
export class BreakGlassService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly wakeups: ClusterWakeups,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  async open(input: OpenBreakGlass, actor: AuditActor, now = new Date()): Promise<BreakGlassView> {
    const expiresAt = this.expiry(input, now);
    const clusters = await this.clustersInScope(input.scope, input.name);
    const row = await this.db.prisma.$transaction(async (tx) => {
      const created = await tx.breakGlass.create({
        data: {
          scope: input.scope,
          scopeName: input.name,
          reason: input.reason,
          allowSyncOutsideWindows: input.allowSyncOutsideWindows,
          pauseSelfHeal: input.pauseSelfHeal,
          openedBy: actor,
          openedAt: now,
          expiresAt,
        },
      });
      await this.audit.record(
        {
          actor,
          action: 'break-glass.opened',
          scope: `${input.scope}:${input.name}`,
          details: {
            breakGlassId: created.id,
            reason: input.reason,
            expiresAt: expiresAt.toISOString(),
            allowSyncOutsideWindows: input.allowSyncOutsideWindows,
            pauseSelfHeal: input.pauseSelfHeal,
          },
        },
        tx,
      );
      return created;
    });
    await this.wakeups.notify(clusters);
    return view(row, 0, now);
  }

  /** Closes an active override by hand; enforcement resumes on the next assignment fetch. */
  async close(id: number, reason: string, actor: AuditActor, now = new Date()): Promise<BreakGlassView> {
    const row = await this.find(id);
    if (row.closedAt) {
      throw new HubError(
        409,
        'already-closed',
        `break-glass #${id} was already ${row.closeKind ?? 'closed'} at ${row.closedAt.toISOString()}`,
      );
    }
    if (row.expiresAt.getTime() <= now.getTime()) {
      // It lapsed before the sweeper saw it: record it as what it is.
      await this.expire(row, now);
      throw new HubError(
        409,
        'already-closed',
        `break-glass #${id} expired at ${row.expiresAt.toISOString()}`,
      );
    }
    const closed = await this.finish(row, { kind: 'closed', by: actor, reason, at: now });
    if (!closed) throw new HubError(409, 'already-closed', `break-glass #${id} was closed at the same time`);
    return this.get(id, now);
  }

  async list(state: 'active' | 'closed' | 'all', now = new Date()): Promise<BreakGlassView[]> {
    const rows = await this.db.prisma.breakGlass.findMany({
      where: inState(state, now),
      orderBy: { id: 'desc' },
      include: { _count: { select: { changes: true } } },
    });
    return rows.map((r) => view(r, r._count.changes, now));
  }

  /** One page of `list`, newest first (see common/name-page.ts). */
  async page(
    state: 'active' | 'closed' | 'all',
    q: PageQuery,
    now = new Date(),
  ): Promise<Page<BreakGlassView>> {
    const key: PageKey<{ id: number }> = { field: 'id', order: 'desc', of: (r) => r.id, numeric: true };
    const { where, orderBy, take } = keyPageArgs(q, key);
    const rows = await this.db.prisma.breakGlass.findMany({
      where: { AND: [inState(state, now), where] },
      orderBy,
      take,
      include: { _count: { select: { changes: true } } },
    });
    const page = keyPageOf(rows, q, key);
    return { items: page.rows.map((r) => view(r, r._count.changes, now)), nextCursor: page.nextCursor };
  }

  async get(id: number, now = new Date()): Promise<BreakGlassView> {
    const row = await this.find(id);
    const changes = await this.db.prisma.breakGlassChange.count({ where: { breakGlassId: id } });
    return view(row, changes, now);
  }

  /** The post-incident record: the override and every manual change seen under it, oldest first. */
  async record(id: number, now = new Date()): Promise<BreakGlassRecordView> {
    const row = await this.find(id);
    const changes = await this.db.prisma.breakGlassChange.findMany({
      where: { breakGlassId: id },
      orderBy: [{ at: 'asc' }, { id: 'asc' }],
    });
    return {
      breakGlass: view(row, changes.length, now),
      changes: changes.map((c) => ({
        summary: `manual change under break-glass #${id}`,
        target: c.targetName,
        cluster: c.clusterName,
        resource: c.resource as DriftReport['resource'],
        paths: c.paths,
        manager: c.manager,
        state: c.state,
        at: c.at.toISOString(),
      })),
    };
  }

  /**
   * The overrides in force for these targets (of one cluster, as assignments carry them, or of a
   * page of the fleet view), by target name, in one query. An override past its expiry is left out
   * even before the sweeper closes it.
   */
  async activeFor(
    targets: readonly TargetScope[],
    now = new Date(),
  ): Promise<Map<string, BreakGlassOverride[]>> {
    if (targets.length === 0) return new Map();
    const rows = await this.db.prisma.breakGlass.findMany({
      where: {
        closedAt: null,
        expiresAt: { gt: now },
        OR: [
          { scope: 'cluster', scopeName: { in: [...new Set(targets.map((t) => t.clusterName))] } },
          { scope: 'appset', scopeName: { in: [...new Set(targets.map((t) => t.appSetName))] } },
          { scope: 'target', scopeName: { in: targets.map((t) => t.name) } },
        ],
      },
      orderBy: { id: 'asc' },
    });
    const byTarget = new Map<string, BreakGlassOverride[]>();
    for (const t of targets) {
      const applying = rows.filter(
        (r) =>
          (r.scope === 'cluster' && r.scopeName === t.clusterName) ||
          (r.scope === 'appset' && r.scopeName === t.appSetName) ||
          (r.scope === 'target' && r.scopeName === t.name),
      );
      byTarget.set(
        t.name,
        applying.map((r) => ({
          id: String(r.id),
          reason: r.reason,
          expiresAt: r.expiresAt.toISOString(),
          allowSyncOutsideWindows: r.allowSyncOutsideWindows,
          pauseSelfHeal: r.pauseSelfHeal,
        })),
      );
    }
    return byTarget;
  }

  /** Closes every override past its expiry as "expired" (audited) and wakes its clusters. */
  async sweepExpired(now = new Date()): Promise<number> {
    const due = await this.db.prisma.breakGlass.findMany({
      where: { closedAt: null, expiresAt: { lte: now } },
      orderBy: { id: 'asc' },
      take: 100,
    });
    let swept = 0;
    for (const row of due) if (await this.expire(row, now)) swept++;
    return swept;
  }

  private async expire(row: BreakGlassRow, now: Date): Promise<boolean> {
    return this.finish(row, { kind: 'expired', by: systemActor('break-glass-expiry'), reason: '', at: now });
  }

  /** Claims the close with a conditional update, so two replicas never record one close twice. */
  private async finish(
    row: BreakGlassRow,
    close: { kind: 'closed' | 'expired'; by: AuditActor; reason: string; at: Date },
  ): Promise<boolean> {
    const clusters = await this.clustersInScope(row.scope as BreakGlassScope, row.scopeName, false);
    const done = await this.db.prisma.$transaction(async (tx) => {
      const claimed = await tx.breakGlass.updateMany({
        where: { id: row.id, closedAt: null },
        data: {
          closedAt: close.kind === 'expired' ? row.expiresAt : close.at,
          closedBy: close.by,
          closeKind: close.kind,
          closeReason: close.reason,
        },
      });
      if (claimed.count !== 1) return false;
      const changes = await tx.breakGlassChange.count({ where: { breakGlassId: row.id } });
      await this.audit.record(
        {
          actor: close.by,
          action: `break-glass.${close.kind}`,
          scope: `${row.scope}:${row.scopeName}`,
          details: {
            breakGlassId: row.id,
            reason: close.reason,
            openedBy: row.openedBy,
            expiresAt: row.expiresAt.toISOString(),
            manualChanges: changes,
          },
        },
        tx,
      );
      return true;
    });
    if (done) await this.wakeups.notify(clusters);
    return done;
  }

  private async find(id: number): Promise<BreakGlassRow> {
    const row = await this.db.prisma.breakGlass.findUnique({ where: { id } });
    if (!row) throw HubError.notFound('break-glass', `#${id}`);
    return row;
  }

  private expiry(input: OpenBreakGlass, now: Date): Date {
    const maxMinutes = this.config.breakGlass.maxMinutes;
    const field = input.expiresAt !== undefined ? 'expiresAt' : 'durationMinutes';
    const at =
      input.expiresAt !== undefined
        ? new Date(input.expiresAt)
        : new Date(now.getTime() + (input.durationMinutes ?? 0) * 60_000);
    if (at.getTime() <= now.getTime()) {
      throw new HubError(400, 'invalid-request', `${field}: the override would expire in the past`, field);
    }
    if (at.getTime() - now.getTime() > maxMinutes * 60_000) {
      throw new HubError(
        400,
        'invalid-request',
        `${field}: a break-glass may last at most ${maxMinutes} minutes (BREAK_GLASS_MAX_MINUTES)`,
        field,
      );
    }
    return at;
  }

  /** The clusters whose targets the scope covers; with `mustExist`, an unknown name is a 404 on `name`. */
  private async clustersInScope(scope: BreakGlassScope, name: string, mustExist = true): Promise<string[]> {
    switch (scope) {
      case 'cluster': {
        const c = await this.db.prisma.cluster.findUnique({ where: { name }, select: { id: true } });
        if (!c && mustExist) throw new HubError(404, 'not-found', `cluster "${name}" does not exist`, 'name');
        return c ? [c.id] : [];
      }
      case 'appset': {
        const a = await this.db.prisma.applicationSet.findUnique({
          where: { name },
          select: { targets: { select: { clusterId: true } } },
        });
        if (!a && mustExist) throw new HubError(404, 'not-found', `appset "${name}" does not exist`, 'name');
        return a ? a.targets.map((t) => t.clusterId) : [];
      }
      case 'target': {
        const t = await this.db.prisma.target.findUnique({ where: { name }, select: { clusterId: true } });
        if (!t && mustExist) throw new HubError(404, 'not-found', `target "${name}" does not exist`, 'name');
        return t ? [t.clusterId] : [];
      }
    }
  }
}

function view(row: BreakGlassRow, manualChanges: number, now: Date): BreakGlassView {
  const state: BreakGlassState = row.closedAt
    ? row.closeKind === 'expired'
      ? 'expired'
      : 'closed'
    : row.expiresAt.getTime() <= now.getTime()
      ? 'expired'
      : 'active';
  return {
    id: row.id,
    scope: row.scope as BreakGlassScope,
    name: row.scopeName,
    reason: row.reason,
    allowSyncOutsideWindows: row.allowSyncOutsideWindows,
    pauseSelfHeal: row.pauseSelfHeal,
    state,
    openedBy: row.openedBy,
    openedAt: row.openedAt.toISOString(),
    expiresAt: row.expiresAt.toISOString(),
    closedAt: row.closedAt?.toISOString() ?? null,
    closedBy: row.closedBy,
    closeReason: row.closeReason,
    manualChanges,
  };
}

/**
 * "Manual change under break-glass #N": report ingestion calls this inside its transaction with the
 * new drift reports that name a break-glass, so the post-incident record and the report land
 * together. An id the hub does not know (stale or forged) is left to the drift's audit event.
 */
export async function recordBreakGlassChanges(
  tx: Tx,
  clusterId: string,
  drifts: readonly { report: DriftReport; targetName: string }[],
): Promise<void> {
  const withId = drifts
    .map((d) => ({ ...d, id: Number(d.report.breakGlassId) }))
    .filter((d) => Number.isSafeInteger(d.id) && d.id > 0);
  if (withId.length === 0) return;
  const cluster = await tx.cluster.findUnique({ where: { id: clusterId }, select: { name: true } });
  // An agent names the break-glass; the hub decides whether it may: only one still open, and only
  // one that covers the reported target on this agent's own cluster. Anything else is not recorded.
  const open = await tx.breakGlass.findMany({
    where: {
      id: { in: [...new Set(withId.map((d) => d.id))] },
      closedAt: null,
      expiresAt: { gt: new Date() },
    },
    select: { id: true, scope: true, scopeName: true },
  });
  const targets = await tx.target.findMany({
    where: { name: { in: [...new Set(withId.map((d) => d.targetName))] }, clusterId },
    select: { name: true, appSet: { select: { name: true } } },
  });
  const appSetOf = new Map(targets.map((t) => [t.name, t.appSet.name]));
  const covers = (id: number, targetName: string) =>
    open.some(
      (b) =>
        b.id === id &&
        appSetOf.has(targetName) &&
        ((b.scope === 'cluster' && b.scopeName === cluster?.name) ||
          (b.scope === 'appset' && b.scopeName === appSetOf.get(targetName)) ||
          (b.scope === 'target' && b.scopeName === targetName)),
    );
  await tx.breakGlassChange.createMany({
    data: withId
      .filter((d) => covers(d.id, d.targetName))
      .map(({ report, targetName, id }) => ({
        breakGlassId: id,
        targetName,
        clusterName: cluster?.name ?? '',
        state: report.state,
        resource: toJson(report.resource),
        paths: report.paths,
        manager: report.manager ?? null,
        at: new Date(report.at),
        reportId: report.id,
      })),
    skipDuplicates: true,
  });
}

function inState(state: 'active' | 'closed' | 'all', now: Date): Prisma.BreakGlassWhereInput {
  if (state === 'active') return { closedAt: null, expiresAt: { gt: now } };
  if (state === 'closed') return { OR: [{ closedAt: { not: null } }, { expiresAt: { lte: now } }] };
  return {};
}
