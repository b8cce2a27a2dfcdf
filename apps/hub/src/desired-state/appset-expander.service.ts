// An appset's expansion as the queue and the API ask for it: expand, confirm a held one, preview; one at a time per appset.
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ExpansionPreviewView } from '@flotilla/contract';
import { HubError } from '../common/hub-error.js';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { deletionGuardLimit, evaluateDeletionGuard } from './deletion-guard.js';
import { DesiredTargets, type ComputedExpansion } from './desired-targets.service.js';
import { ExpansionError } from './expansion-error.js';
import type { PendingExpansion } from './expansion-hold.js';
import { guardInput, planExpansion, targetSetHash, type DesiredTarget } from './expansion-plan.js';
import { STALE, type Stale } from './expansion-staleness.js';
import {
  ExpansionTransaction,
  goneOutcome,
  type ExpansionConfirmation,
  type ExpansionOutcome,
} from './expansion-transaction.service.js';

/** The dry run: what an expansion would compute and change, changing nothing. */
/** The generators' output and what an expansion would change, as the API returns it. */
export type ExpansionPreview = ExpansionPreviewView;

/** Recomputations in one job before the job fails and BullMQ retries it. */
const STALE_RETRIES = 3;

/**
 * appset → targets: runs the generators against the inventory and Git, renders every target's
 * bundle, then applies only the differences to the targets in one transaction. Any error (generator,
 * repository, revision, manifests, unknown cluster) is recorded on the appset and changes no target.
 */
@Injectable()
export class AppSetExpander {
  private readonly logger = new Logger(AppSetExpander.name);
  /** Expansions of one appset never overlap in this process (two jobs with different inputs may be queued). */
  private readonly running = new Map<string, Promise<unknown>>();

  constructor(
    private readonly db: Database,
    private readonly desiredTargets: DesiredTargets,
    private readonly transaction: ExpansionTransaction,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  async expand(appSetId: string): Promise<ExpansionOutcome> {
    return this.serialised(appSetId, async () => {
      // A result computed from inputs that moved meanwhile (a newer commit recorded by another
      // replica, a new spec) is dropped and computed again from the new inputs.
      for (let attempt = 1; attempt <= STALE_RETRIES; attempt++) {
        const outcome = await this.expandNow(appSetId);
        if (outcome !== STALE) return outcome;
        this.logger.log(`appset ${appSetId}: inputs moved during expansion ${attempt}; expanding again`);
      }
      // Still moving: BullMQ retries the job later (with back-off) rather than spin here.
      throw new Error(`appset ${appSetId}: inputs kept moving during ${STALE_RETRIES} expansions`);
    });
  }

  /**
   * Applies the expansion the guard holds, as computed — only if a fresh computation still gives the
   * same target set (else 409: the inputs moved, look at the preview again).
   */
  async confirm(appSetName: string, confirmation: ExpansionConfirmation): Promise<ExpansionOutcome> {
    const found = await this.db.prisma.applicationSet.findUnique({ where: { name: appSetName } });
    if (!found) throw HubError.notFound('appset', appSetName);
    return this.serialised(found.id, async () => {
      const appSet = await this.db.prisma.applicationSet.findUniqueOrThrow({ where: { id: found.id } });
      const pending = heldExpansion(
        appSetName,
        appSet.pendingExpansion as PendingExpansion | null,
        confirmation,
      );
      let computed;
      try {
        computed = await this.desiredTargets.compute(appSet.name, appSet.spec, true);
      } catch (e) {
        if (e instanceof ExpansionError) throw new HubError(409, e.code, e.message, e.path);
        throw e;
      }
      if (targetSetHash(computed.desired) !== pending.inputsHash) {
        throw new HubError(
          409,
          'inputs-changed',
          `the inputs changed since the expansion was held; GET /api/v1/appsets/${appSetName}/preview to re-check, then confirm the new inputsHash`,
          'inputsHash',
        );
      }
      const outcome = await this.transaction.apply(
        appSet.id,
        appSet.name,
        appSet.spec,
        computed,
        confirmation,
      );
      if (outcome === STALE) {
        throw new HubError(
          409,
          'inputs-changed',
          `the inputs changed while the confirmed expansion was written; GET /api/v1/appsets/${appSetName}/preview to re-check, then confirm the new inputsHash`,
          'inputsHash',
        );
      }
      return outcome;
    });
  }

  /** Computes an expansion of `document` and what it would change for the appset of that name; writes nothing. */
  async preview(appSetName: string, document: unknown): Promise<ExpansionPreview> {
    let desired: DesiredTarget[];
    try {
      ({ desired } = await this.desiredTargets.compute(appSetName, document, false));
    } catch (e) {
      if (e instanceof ExpansionError) throw new HubError(422, e.code, e.message, e.path);
      throw e;
    }
    const existing = await this.db.prisma.target.findMany({ where: { appSet: { name: appSetName } } });
    const stored = await this.db.prisma.applicationSet.findUnique({
      where: { name: appSetName },
      select: { guardBaseline: true },
    });
    const plan = planExpansion(existing, desired);
    const limit = deletionGuardLimit(document, this.config.appsets.deletionGuardPercent);
    return {
      inputsHash: targetSetHash(desired),
      targets: desired.map((d) => ({
        name: d.name,
        cluster: d.clusterName,
        namespace: d.namespace,
        repoUrl: d.repoUrl,
        path: d.sourcePath,
        targetRevision: d.targetRevision,
        desiredRevision: d.desiredRevision,
        sources: d.sources,
        bundleDigest: d.bundleDigest,
      })),
      create: plan.create.map((d) => d.name).sort(),
      update: plan.update.map((u) => u.desired.name).sort(),
      move: plan.move.map((m) => m.desired.name).sort(),
      delete: plan.delete.map((t) => t.name).sort(),
      guard: evaluateDeletionGuard(
        guardInput(existing.length, plan, desired.length, stored?.guardBaseline ?? null),
        limit,
      ),
    };
  }

  private async serialised<T>(appSetId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.running.get(appSetId) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(work);
    this.running.set(appSetId, run);
    try {
      return await run;
    } finally {
      if (this.running.get(appSetId) === run) this.running.delete(appSetId);
    }
  }

  private async expandNow(appSetId: string): Promise<ExpansionOutcome | Stale> {
    const appSet = await this.db.prisma.applicationSet.findUnique({ where: { id: appSetId } });
    // Deleted, or being deleted with its objects (its targets wait for their agents): nothing to expand.
    if (!appSet || appSet.status === 'Deleting') return goneOutcome();
    let computed: ComputedExpansion;
    try {
      computed = await this.desiredTargets.compute(appSet.name, appSet.spec, true);
    } catch (e) {
      if (!(e instanceof ExpansionError)) throw e;
      const outcome = await this.transaction.recordFailure(appSet, e);
      if (outcome !== STALE) this.logger.warn(`appset ${appSet.name}: ${e.code}: ${e.message}`);
      return outcome;
    }
    return this.transaction.apply(appSet.id, appSet.name, appSet.spec, computed);
  }
}

/** The expansion held now, if the confirmation names it; else 409 before anything is computed. */
function heldExpansion(
  appSetName: string,
  pending: PendingExpansion | null,
  confirmation: ExpansionConfirmation,
): PendingExpansion {
  if (!pending) {
    throw new HubError(
      409,
      'nothing-held',
      `appset "${appSetName}" has no expansion waiting for confirmation`,
    );
  }
  if (pending.inputsHash !== confirmation.inputsHash) {
    throw new HubError(
      409,
      'hold-changed',
      `the held expansion is ${pending.inputsHash}, not ${confirmation.inputsHash}; GET /api/v1/appsets/${appSetName} and confirm what it shows`,
      'inputsHash',
    );
  }
  return pending;
}
