// Writes a computed expansion (or its failure) to the appset and its targets, under the appset's row lock.
import { type AuditActor, systemActor } from '@flotilla/contract';
import { Inject, Injectable } from '@nestjs/common';
import { canonicalJson } from '@flotilla/manifests';
import { AuditLog } from '../audit/audit.service.js';
import { toJson } from '../common/json.js';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { Prisma } from '../generated/prisma/client.js';
import { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';
import {
  deletesResourcesOnDeletion,
  deletionGuardLimit,
  evaluateDeletionGuard,
  nextGuardBaseline,
  preservesResourcesOnDeletion,
  type GuardVerdict,
} from './deletion-guard.js';
import type { ComputedExpansion } from './desired-targets.service.js';
import type { ExpansionError } from './expansion-error.js';
import { heldMessage, pendingExpansionOf, type PendingExpansion } from './expansion-hold.js';
import { guardInput, planExpansion, targetSetHash, type ExpansionPlan } from './expansion-plan.js';
import { capabilitiesMoved, refsMoved, STALE, type Stale } from './expansion-staleness.js';
import { findNameClash, writePlan } from './expansion-writes.js';
import { ReleaseAfterExpansion } from './release-after-expansion.js';
import { requestExpansionDeletions } from './target-deletions.service.js';

export interface ExpansionOutcome {
  status: 'Ready' | 'Error' | 'Gone' | 'Held';
  created: number;
  updated: number;
  deleted: number;
  error?: { code: string; message: string; path?: string };
  held?: PendingExpansion;
}

/** A person's go-ahead for a held expansion. */
export interface ExpansionConfirmation {
  inputsHash: string;
  reason: string;
  actor: AuditActor;
}

/** An expansion planned against the locked targets: what its write and its audit need. */
interface LockedPlan {
  appSetId: string;
  appSetName: string;
  document: unknown;
  computed: ComputedExpansion;
  inputsHash: string;
  limit: number;
  /** The targets stored now, as planning counts them. */
  currentCount: number;
  plan: ExpansionPlan;
  verdict: GuardVerdict;
  previousHold: PendingExpansion | null;
  /** Set when a person confirmed exactly this target set. */
  confirmed: ExpansionConfirmation | undefined;
}

/** The appset is deleted, or being deleted with its objects: nothing to expand. */
export function goneOutcome(): ExpansionOutcome {
  return { status: 'Gone', created: 0, updated: 0, deleted: 0 };
}

/**
 * A 20,000-target write takes a few seconds on a busy machine, past Prisma's 5 s default; the
 * bound still ends a transaction that hangs. The wait covers a pool busy with report ingest.
 */
const EXPANSION_TX = { timeout: 60_000, maxWait: 15_000 };

@Injectable()
export class ExpansionTransaction {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly wakeups: ClusterWakeups,
    private readonly release: ReleaseAfterExpansion,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  /**
   * Applies only the differences to the targets in one transaction (or holds the whole expansion when
   * the deletion guard says so), then lets the rollout release them and wakes the clusters touched.
   */
  async apply(
    appSetId: string,
    appSetName: string,
    document: unknown,
    computed: ComputedExpansion,
    confirmation?: ExpansionConfirmation,
  ): Promise<ExpansionOutcome | Stale> {
    const clash = await findNameClash(
      this.db,
      computed.desired.map((d) => d.name),
      appSetId,
    );
    if (clash) return this.recordNameClash(appSetId, clash);
    const inputsHash = targetSetHash(computed.desired);
    const limit = deletionGuardLimit(document, this.config.appsets.deletionGuardPercent);
    const planned = { appSetId, appSetName, document, computed, inputsHash, limit };
    let touched = new Set<string>();
    // Everything slow (Git, generators, renders) is done: the transaction only reads the current
    // targets, plans against them and writes the difference set-based, so it stays short.
    const outcome = await this.db.prisma.$transaction(async (tx): Promise<ExpansionOutcome | Stale> => {
      const locked = await lockedPlan(tx, planned, confirmation);
      if (locked === STALE || !('plan' in locked)) return locked;
      if (locked.verdict.wouldHold && !locked.confirmed) return this.hold(tx, locked);
      const written = await this.write(tx, locked);
      touched = written.touched;
      return written.outcome;
    }, EXPANSION_TX);
    if (outcome === STALE) return STALE;
    // What Git wants is now on the targets; whether agents get it yet is the rollout's decision.
    // Agents are woken after the release, not before: woken first, every long-poll of the fleet
    // recomputed an unchanged assignment set and was still busy when the release's wake-up came
    // (about 2 s at 100 clusters). The wake-up still goes out when the release fails, for changes
    // agents see without one (sync policy, removed targets).
    // A cluster the release woke is not woken again: its wake-up came after this transaction's commit
    // too, and a second one, landing while its long-poll computes the first, made every such poll
    // compute again and its bundle request ask the database who may read what (1,000 clusters: 1,000
    // more computations and reads per commit).
    let woken: ReadonlySet<string> = new Set();
    try {
      woken = await this.release.afterExpansion(appSetId);
    } finally {
      await this.wakeups.notify([...touched].filter((id) => !woken.has(id)));
    }
    return outcome;
  }

  /**
   * Records a failed expansion, under the appset's row lock like a successful one. A failure computed
   * from older inputs than what is stored now — a spec replaced, a ref another replica recorded at a
   * newer commit, another expansion written since this one began — is dropped and computed again
   * instead: a broken commit that was already fixed must not turn a Ready appset to Error.
   */
  async recordFailure(
    started: { id: string; name: string; spec: unknown; lastExpandedAt: Date | null },
    e: ExpansionError,
  ): Promise<ExpansionOutcome | Stale> {
    const error = { code: e.code, message: e.message, ...(e.path !== undefined && { path: e.path }) };
    return this.db.prisma.$transaction(async (tx): Promise<ExpansionOutcome | Stale> => {
      await tx.$executeRaw`SELECT 1 FROM "ApplicationSet" WHERE "id" = ${started.id} FOR UPDATE`;
      const appSet = await tx.applicationSet.findUnique({ where: { id: started.id } });
      if (!appSet) return goneOutcome();
      if (
        canonicalJson(appSet.spec) !== canonicalJson(started.spec) ||
        appSet.lastExpandedAt?.getTime() !== started.lastExpandedAt?.getTime() ||
        (await refsMoved(tx, e.refs))
      )
        return STALE;
      await tx.applicationSet.update({
        where: { id: appSet.id },
        data: { status: 'Error', error: toJson(error), lastExpandedAt: new Date() },
      });
      if (appSet.status !== 'Error' || JSON.stringify(appSet.error) !== JSON.stringify(error)) {
        await this.audit.record(
          {
            actor: systemActor('expansion'),
            action: 'appset.expand-failed',
            scope: `appset:${appSet.name}`,
            details: error,
          },
          tx,
        );
      }
      return { status: 'Error', created: 0, updated: 0, deleted: 0, error };
    });
  }

  /** Another appset owns a target of this name: the appset is in Error, no target changes. */
  private async recordNameClash(
    appSetId: string,
    clash: { target: string; appSet: string },
  ): Promise<ExpansionOutcome> {
    const error = {
      code: 'target-name-conflict',
      message: `target "${clash.target}" already belongs to appset "${clash.appSet}"`,
      path: 'spec.template.metadata.name',
    };
    await this.db.prisma.applicationSet.update({
      where: { id: appSetId },
      data: { status: 'Error', error: toJson(error), lastExpandedAt: new Date() },
    });
    return { status: 'Error', created: 0, updated: 0, deleted: 0, error };
  }

  /** Nothing is created, updated or deleted: the whole expansion waits, as computed. */
  private async hold(tx: Prisma.TransactionClient, locked: LockedPlan): Promise<ExpansionOutcome> {
    const { appSetId, appSetName, inputsHash, previousHold } = locked;
    const held = pendingExpansionOf({
      inputsHash,
      previous: previousHold,
      currentCount: locked.currentCount,
      targetCount: locked.computed.desired.length,
      plan: locked.plan,
      verdict: locked.verdict,
      limit: locked.limit,
    });
    const error = {
      code: 'deletion-held',
      message: heldMessage(appSetName, held),
      path: 'spec.deletionGuard.maxDeletePercent',
    };
    await tx.applicationSet.update({
      where: { id: appSetId },
      data: {
        status: 'Held',
        error: toJson(error),
        pendingExpansion: toJson(held),
        repoUrls: locked.computed.repoUrls,
        lastExpandedAt: new Date(),
      },
    });
    if (previousHold?.inputsHash !== inputsHash) {
      await this.audit.record(
        {
          actor: systemActor('expansion'),
          action: 'appset.expansion-held',
          scope: `appset:${appSetName}`,
          details: { ...held },
        },
        tx,
      );
    }
    return { status: 'Held', created: 0, updated: 0, deleted: 0, error, held };
  }

  /** Writes the plan and the appset's Ready state; returns the outcome and the clusters whose targets changed. */
  private async write(
    tx: Prisma.TransactionClient,
    locked: LockedPlan,
  ): Promise<{ outcome: ExpansionOutcome; touched: Set<string> }> {
    const { appSetId, appSetName, document, plan, computed } = locked;
    // With Argo CD's resources finalizer, removed targets are deleted with their objects by their
    // agents (a tombstone each); the row goes when the agent reports. Otherwise they are orphaned.
    const cascaded = deletesResourcesOnDeletion(document)
      ? await requestExpansionDeletions(tx, appSetName, plan.delete)
      : { marked: [], audit: [] };
    const marked = new Set(cascaded.marked.map((t) => t.id));
    const touched = await writePlan(tx, appSetId, {
      ...plan,
      delete: plan.delete.filter((t) => !marked.has(t.id)),
    });
    for (const t of cascaded.marked) touched.add(t.clusterId);
    if (cascaded.audit.length > 0) await this.audit.recordMany(cascaded.audit, tx);
    await tx.applicationSet.update({
      where: { id: appSetId },
      data: {
        status: 'Ready',
        error: Prisma.DbNull,
        pendingExpansion: Prisma.DbNull,
        guardBaseline: nextGuardBaseline(
          locked.verdict,
          computed.desired.length,
          locked.confirmed !== undefined,
        ),
        repoUrls: computed.repoUrls,
        lastExpandedAt: new Date(),
      },
    });
    await this.auditHoldEnded(tx, locked);
    const created = plan.create.length;
    // A move is an update to the person who changed the appset; the audit names them apart.
    const updated = plan.update.length + plan.move.length;
    const deleted = plan.delete.length;
    const deletedWithObjects = cascaded.marked.map((t) => t.name).sort();
    if (created + updated + deleted > 0)
      await this.auditExpanded(tx, locked, { created, updated, deleted, deletedWithObjects });
    return { outcome: { status: 'Ready', created, updated, deleted }, touched };
  }

  /** A person's confirmation, or a hold the expansion replaced by itself, is audited. */
  private async auditHoldEnded(tx: Prisma.TransactionClient, locked: LockedPlan): Promise<void> {
    const { appSetName, inputsHash, confirmed, previousHold } = locked;
    if (confirmed) {
      await this.audit.record(
        {
          actor: confirmed.actor,
          action: 'appset.expansion-confirmed',
          scope: `appset:${appSetName}`,
          details: {
            inputsHash,
            reason: confirmed.reason,
            deleted: locked.plan.delete.map((t) => t.name).sort(),
            deletePercent: locked.verdict.deletePercent,
            limit: locked.limit,
          },
        },
        tx,
      );
    } else if (previousHold) {
      // A later expansion within the guard (the Git host recovered) replaces the hold by itself.
      await this.audit.record(
        {
          actor: systemActor('expansion'),
          action: 'appset.hold-released',
          scope: `appset:${appSetName}`,
          details: { heldInputsHash: previousHold.inputsHash, inputsHash },
        },
        tx,
      );
    }
  }

  private async auditExpanded(
    tx: Prisma.TransactionClient,
    { appSetName, document, plan, computed }: LockedPlan,
    counts: { created: number; updated: number; deleted: number; deletedWithObjects: string[] },
  ): Promise<void> {
    const { created, updated, deleted, deletedWithObjects } = counts;
    await this.audit.record(
      {
        actor: systemActor('expansion'),
        action: 'appset.expanded',
        scope: `appset:${appSetName}`,
        details: {
          created,
          updated,
          deleted,
          ...(plan.move.length > 0 && {
            moved: plan.move.map((m) => ({ name: m.desired.name, to: m.desired.clusterName })),
          }),
          ...(preservesResourcesOnDeletion(document) && deleted > 0 && { preserveResourcesOnDeletion: true }),
          ...(deletedWithObjects.length > 0 && { deletedWithObjects }),
          targets: computed.desired.map((d) => ({
            name: d.name,
            revision: d.desiredRevision,
            bundleDigest: d.bundleDigest,
          })),
        },
      },
      tx,
    );
  }
}

/**
 * Locks the appset (expansions of one appset on two hub replicas take turns here) and plans against
 * its targets; STALE when the expansion was computed from older inputs than what is stored now.
 */
async function lockedPlan(
  tx: Prisma.TransactionClient,
  planned: Pick<LockedPlan, 'appSetId' | 'appSetName' | 'document' | 'computed' | 'inputsHash' | 'limit'>,
  confirmation: ExpansionConfirmation | undefined,
): Promise<LockedPlan | ExpansionOutcome | Stale> {
  const { appSetId, document, computed } = planned;
  await tx.$executeRaw`SELECT 1 FROM "ApplicationSet" WHERE "id" = ${appSetId} FOR UPDATE`;
  const appSet = await tx.applicationSet.findUniqueOrThrow({ where: { id: appSetId } });
  if (appSet.status === 'Deleting') return goneOutcome();
  // Computed from older inputs than what is stored now (a ref another replica recorded at a newer
  // commit, a spec replaced meanwhile): writing it could move targets backwards. Checked under
  // the appset's row lock, so no newer expansion can commit between this check and the write.
  if (
    canonicalJson(appSet.spec) !== canonicalJson(document) ||
    (await refsMoved(tx, computed.refs)) ||
    (await capabilitiesMoved(tx, computed.capabilities))
  )
    return STALE;
  // A target being deleted with its objects is gone as far as planning goes (not counted by the
  // guard, not deleted twice) unless Git wants it again: then it is updated in place.
  const wanted = new Set(computed.desired.map((d) => d.name));
  const existing = (await tx.target.findMany({ where: { appSetId } })).filter(
    (t) => t.deletionId === null || wanted.has(t.name),
  );
  const plan = planExpansion(existing, computed.desired);
  const verdict = evaluateDeletionGuard(
    guardInput(existing.length, plan, computed.desired.length, appSet.guardBaseline),
    planned.limit,
  );
  return {
    ...planned,
    currentCount: existing.length,
    plan,
    verdict,
    previousHold: appSet.pendingExpansion as PendingExpansion | null,
    confirmed: confirmation?.inputsHash === planned.inputsHash ? confirmation : undefined,
  };
}
