import { type AuditActor, systemActor, type Page, type PinView } from '@flotilla/contract';
import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { Database } from '../../db/database.js';
import { HubError, parseInput } from '../../common/hub-error.js';
import { AuditLog } from '../../audit/audit.service.js';
import { GitMirrorError } from '../../sources/git/git-mirror.js';
import { GitMirrorsService } from '../../sources/git/git-mirrors.service.js';
import { ClusterWakeups } from '../../wakeups/cluster-wakeups.service.js';
import { RenderService } from '../../render/render.service.js';
import { RenderError } from '../../render/render-error.js';
import type { TargetPin } from '../../generated/prisma/client.js';
import { labelSelectorSchema } from '@flotilla/labels';
import { selectTargets } from '../../desired-state/target-selection.js';
import { keyPageOf, pageArgs, type PageQuery } from '../../common/name-page.js';

export const pinRequestSchema = z.object({
  /** A commit, branch or tag of the target's repository; resolved to a commit when the pin is made. */
  revision: z.string().trim().min(1),
  reason: z.string().trim().min(1, 'say why (it goes to the audit log)').max(1000),
  expiresAt: z.iso
    .datetime({ offset: true })
    .optional()
    .refine((v) => v === undefined || Date.parse(v) > Date.now(), 'must be in the future'),
});
export type PinRequest = z.infer<typeof pinRequestSchema>;

export const appSetPinRequestSchema = pinRequestSchema.extend({
  /** Cluster labels, as a Kubernetes label selector; absent = every target of the appset. */
  clusterSelector: labelSelectorSchema.optional(),
});

export const appSetUnpinSchema = z.object({
  reason: z.string().trim().min(1, 'say why (it goes to the audit log)').max(1000),
  clusterSelector: labelSelectorSchema.optional(),
});

export const unpinSchema = z.object({
  reason: z.string().trim().min(1, 'say why (it goes to the audit log)').max(1000),
});

/**
 * Rollback by pinning: a pinned target is served the pinned revision's bundle whatever Git (and
 * auto-sync) says, until it is unpinned or the pin expires. Pins made by automatic rollback look the
 * same, with actor `agent:<cluster>`.
 */
@Injectable()
export class PinsService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly mirrors: GitMirrorsService,
    private readonly render: RenderService,
    private readonly wakeups: ClusterWakeups,
  ) {}

  async pin(targetName: string, body: unknown, actor: AuditActor) {
    const req = parseInput(pinRequestSchema, body);
    const target = await this.db.prisma.target.findUnique({ where: { name: targetName } });
    if (!target) throw HubError.notFound('target', targetName);
    const [pin] = await this.write([await this.prepare(target, req.revision)], req, actor);
    return pin;
  }

  /**
   * Pins every target of an appset whose cluster matches `clusterSelector` (all of them without
   * one). Every revision and bundle is resolved first and all pins are written in one transaction,
   * so a bad request pins nothing.
   */
  async pinAppSet(appSetName: string, body: unknown, actor: AuditActor) {
    const req = parseInput(appSetPinRequestSchema, body);
    const chosen = await selectTargets(this.db, { appSet: appSetName, clusterSelector: req.clusterSelector });
    const prepared = [];
    for (const t of chosen) prepared.push(await this.prepare(t, req.revision));
    return this.write(prepared, req, actor);
  }

  /** Unpins every pinned target of the appset on a matching cluster; returns their names. */
  async unpinAppSet(appSetName: string, body: unknown, actor: AuditActor): Promise<string[]> {
    const { reason, clusterSelector } = parseInput(appSetUnpinSchema, body);
    const chosen = await selectTargets(this.db, { appSet: appSetName, clusterSelector });
    const pins = await this.db.prisma.targetPin.findMany({
      where: { targetId: { in: chosen.map((t) => t.id) } },
      include: { target: { select: { name: true, clusterId: true } } },
    });
    await this.db.prisma.$transaction(async (tx) => {
      await tx.targetPin.deleteMany({ where: { targetId: { in: pins.map((p) => p.targetId) } } });
      await this.audit.recordMany(
        pins.map((p) => ({
          actor,
          action: 'target.unpinned',
          scope: `target:${p.target.name}`,
          details: { revision: p.revision, pinnedBy: p.actor, reason },
        })),
        tx,
      );
    });
    await this.wakeups.notify(pins.map((p) => p.target.clusterId));
    return pins.map((p) => p.target.name).sort();
  }

  /** The commit `revision` names in the target's repository, and the bundle to serve for it. */
  private async prepare(
    target: { id: string; name: string; clusterId: string; repoUrl: string; sourcePath: string },
    revision: string,
  ) {
    const repo = await this.db.prisma.repository.findUnique({ where: { url: target.repoUrl } });
    if (!repo || !this.mirrors.mirrors.hasMirror(repo.id))
      throw new HubError(409, 'repository-not-fetched', `repository ${target.repoUrl} has no mirror yet`);
    let sha: string;
    try {
      sha = this.mirrors.mirrors.resolve(repo.id, revision);
    } catch (e) {
      if (e instanceof GitMirrorError)
        throw new HubError(422, 'unknown-revision', `${target.repoUrl}: ${e.message}`, 'revision');
      throw e;
    }
    return { target, sha, digest: await this.bundleFor(target, repo.id, sha) };
  }

  private async write(
    prepared: Awaited<ReturnType<PinsService['prepare']>>[],
    req: { reason: string; expiresAt?: string | undefined },
    actor: AuditActor,
  ) {
    const expiresAt = req.expiresAt ? new Date(req.expiresAt) : null;
    const pins = await this.db.prisma.$transaction(async (tx) => {
      const rows = [];
      for (const { target, sha, digest } of prepared) {
        const pin = { revision: sha, bundleDigest: digest, reason: req.reason, actor, expiresAt };
        rows.push({
          name: target.name,
          row: await tx.targetPin.upsert({
            where: { targetId: target.id },
            create: { targetId: target.id, ...pin },
            update: { ...pin, createdAt: new Date() },
          }),
        });
      }
      await this.audit.recordMany(
        prepared.map(({ target, sha, digest }) => ({
          actor,
          action: 'target.pinned',
          scope: `target:${target.name}`,
          details: {
            revision: sha,
            bundleDigest: digest,
            reason: req.reason,
            expiresAt: req.expiresAt ?? null,
          },
        })),
        tx,
      );
      return rows;
    });
    await this.wakeups.notify(prepared.map((p) => p.target.clusterId));
    return pins.map((p) => view(p.name, p.row));
  }

  async unpin(targetName: string, body: unknown, actor: AuditActor): Promise<void> {
    const { reason } = parseInput(unpinSchema, body);
    const target = await this.db.prisma.target.findUnique({
      where: { name: targetName },
      include: { pin: true },
    });
    if (!target) throw HubError.notFound('target', targetName);
    if (!target.pin) throw new HubError(404, 'not-found', `target "${targetName}" is not pinned`);
    const pin = target.pin;
    await this.db.prisma.$transaction(async (tx) => {
      await tx.targetPin.delete({ where: { targetId: target.id } });
      await this.audit.record(
        {
          actor,
          action: 'target.unpinned',
          scope: `target:${target.name}`,
          details: { revision: pin.revision, pinnedBy: pin.actor, reason },
        },
        tx,
      );
    });
    await this.wakeups.notify([target.clusterId]);
  }

  /** Removes pins past their expiry (each claimed by a conditional delete), audited; returns how many. */
  async sweepExpired(now = new Date()): Promise<number> {
    const due = await this.db.prisma.targetPin.findMany({
      where: { expiresAt: { lte: now } },
      include: { target: { select: { name: true, clusterId: true } } },
      take: 500,
    });
    const woken: string[] = [];
    for (const pin of due) {
      const removed = await this.db.prisma.$transaction(async (tx) => {
        const claimed = await tx.targetPin.deleteMany({
          where: { targetId: pin.targetId, createdAt: pin.createdAt, expiresAt: { lte: now } },
        });
        if (claimed.count === 0) return false; // another replica, or the pin was replaced meanwhile
        await this.audit.record(
          {
            actor: systemActor('pin-expiry'),
            action: 'target.pin-expired',
            scope: `target:${pin.target.name}`,
            details: {
              revision: pin.revision,
              pinnedBy: pin.actor,
              reason: pin.reason,
              expiresAt: pin.expiresAt,
            },
          },
          tx,
        );
        return true;
      });
      if (removed) woken.push(pin.target.clusterId);
    }
    await this.wakeups.notify(woken);
    return woken.length;
  }

  async list(): Promise<PinView[]> {
    const rows = await this.db.prisma.targetPin.findMany({
      orderBy: { createdAt: 'desc' },
      include: { target: { select: { name: true } } },
    });
    return rows.map((p) => view(p.target.name, p));
  }

  /** One page of pins by target name (see common/name-page.ts). */
  async page(q: PageQuery): Promise<Page<PinView>> {
    const after = pageArgs(q);
    const rows = await this.db.prisma.targetPin.findMany({
      where: after.where.name ? { target: { name: after.where.name } } : {},
      orderBy: { target: { name: 'asc' } },
      take: after.take,
      include: { target: { select: { name: true } } },
    });
    const page = keyPageOf(rows, q, { field: 'target', order: 'asc', of: (p) => p.target.name });
    return { items: page.rows.map((p) => view(p.target.name, p)), nextCursor: page.nextCursor };
  }

  /**
   * The bundle the target ran at that commit when it has one in its history (exactly what it ran,
   * whatever template options made it) and retention has not pruned it; otherwise the target's
   * source path rendered at the commit (which stores the bundle again).
   */
  private async bundleFor(
    target: { id: string; repoUrl: string; sourcePath: string },
    repositoryId: string,
    sha: string,
  ): Promise<string> {
    const ran = await this.db.prisma.syncRun.findFirst({
      where: { targetId: target.id, revision: sha, outcome: 'Succeeded', dryRun: false },
      orderBy: { startedAt: 'desc' },
      select: { bundleDigest: true },
    });
    if (ran) {
      const kept = await this.db.prisma.bundle.findUnique({
        where: { digest: ran.bundleDigest },
        select: { digest: true },
      });
      if (kept) return kept.digest;
    }
    try {
      return await this.render.render({
        repositoryId,
        repoUrl: target.repoUrl,
        revision: sha,
        path: target.sourcePath,
      });
    } catch (e) {
      if (e instanceof RenderError) throw new HubError(422, e.code, e.message, 'revision');
      throw e;
    }
  }
}

function view(targetName: string, p: TargetPin): PinView {
  return {
    target: targetName,
    revision: p.revision,
    bundleDigest: p.bundleDigest,
    reason: p.reason,
    actor: p.actor,
    createdAt: p.createdAt.toISOString(),
    expiresAt: p.expiresAt?.toISOString() ?? null,
    expired: p.expiresAt !== null && p.expiresAt <= new Date(),
  };
}
