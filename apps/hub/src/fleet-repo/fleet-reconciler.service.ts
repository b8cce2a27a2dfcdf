// Reconciles one fleet source at one commit: validate, plan, guard deletions, apply.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Inject, Injectable } from '@nestjs/common';
import { AuditLog } from '../audit/audit.service.js';
import { HubError } from '../common/hub-error.js';
import { toJson } from '../common/json.js';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import type { FleetSource } from '../generated/prisma/client.js';
import { GitMirrorsService } from '../sources/git/git-mirrors.service.js';
import { judgeDeletions, type DeletionJudgement, type PendingDeletion } from './deletion-hold.js';
import { FleetApply, type FleetConfirmation } from './fleet-apply.service.js';
import { checkFleetCommit, readFleetFiles } from './fleet-commit-checks.js';
import { FleetFollowUp } from './fleet-follow-up.service.js';
import { keyOf, planFleet, type FleetPlan, type ManagedEntry } from './fleet-plan.js';
import { FleetRejections } from './fleet-rejections.service.js';
import { systemActor } from '@flotilla/contract';

const run = promisify(execFile);

/** What one reconcile of a fleet source did. */
export interface FleetOutcome {
  status: 'Ready' | 'Error' | 'Held' | 'Gone';
  commit?: string;
  created: string[];
  updated: string[];
  deleted: string[];
  error?: unknown;
}

const none = { created: [], updated: [], deleted: [] };

/**
 * At each new commit of a source the whole directory is validated (any invalid object → nothing
 * changes, the errors name file, document and field); then the plan against what the fleet sources
 * manage is applied (FleetApply). A commit that would delete too many objects waits for confirmation.
 */
@Injectable()
export class FleetReconciler {
  constructor(
    private readonly db: Database,
    private readonly mirrors: GitMirrorsService,
    private readonly audit: AuditLog,
    private readonly fleetApply: FleetApply,
    private readonly followUp: FleetFollowUp,
    private readonly rejections: FleetRejections,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  async reconcile(id: string, commit: string, confirmation?: FleetConfirmation): Promise<FleetOutcome> {
    const source = await this.db.prisma.fleetSource.findUnique({ where: { id } });
    if (!source) return { status: 'Gone', ...none };
    const repo = await this.db.prisma.repository.findUnique({ where: { url: source.repoUrl } });
    if (!repo || !this.mirrors.mirrors.hasMirror(repo.id)) {
      const error = { code: 'repository-not-fetched', message: `${source.repoUrl} has not been fetched yet` };
      return this.refuse(source, commit, error);
    }

    // 1. Validate the whole directory, health rules included; any error refuses the whole commit.
    const files = readFleetFiles(this.mirrors.mirrors, repo.id, commit, source.path);
    const check = await checkFleetCommit(files, commit);
    if (!check.ok) return this.refuse(source, commit, check.error);

    // 2. Plan against what the fleet sources manage; never take another source's object.
    const author = await this.authorOf(repo.id, commit);
    const managed: ManagedEntry[] = await this.db.prisma.fleetManaged.findMany();
    const plan = planFleet(id, check.objects, managed);
    if (plan.conflicts.length > 0) return this.refuse(source, commit, conflictError(plan));
    if (
      plan.create.length + plan.update.length + plan.delete.length === 0 &&
      source.appliedCommit === commit &&
      source.status === 'Ready'
    )
      return { status: 'Ready', commit, ...none };

    // 3. The deletion guard: a truncated commit (or a wrong path) must not delete the fleet.
    const judgement = judgeDeletions({
      sourceId: id,
      commit,
      plan,
      managed,
      targets: await this.targetsAtStake(id, managed, plan),
      baseline: source.guardBaseline,
      limit: this.config.appsets.deletionGuardPercent,
      confirmed: confirmation?.commit === commit,
    });
    if (judgement.held) return this.hold(source, commit, author, judgement.held);

    // 4. Apply: hub objects in one transaction, then windows through their service.
    let applied;
    try {
      applied = await this.fleetApply.apply(
        source,
        commit,
        author,
        plan,
        managed,
        judgement.guardBaseline,
        check.policies,
        confirmation,
      );
      await this.fleetApply.applyWindows(plan, commit, author);
      await this.fleetApply.applySourceVerifications(plan, author);
    } catch (e) {
      // A refusal of the hub's own checks (an appset the API would refuse too): recorded, not retried.
      if (!(e instanceof HubError)) throw e;
      return this.refuse(source, commit, {
        ...e.toApiError(),
        message: `commit ${commit.slice(0, 12)}: ${e.message}`,
      });
    }
    await this.followUp.afterApply(applied);
    return {
      status: 'Ready',
      commit,
      created: plan.create.map((o) => keyOf(o.kind, o.name)),
      updated: plan.update.map((o) => keyOf(o.kind, o.name)),
      deleted: plan.delete.map((m) => keyOf(m.kind, m.name)),
    };
  }

  private async refuse(
    source: FleetSource,
    commit: string,
    error: Record<string, unknown>,
  ): Promise<FleetOutcome> {
    await this.rejections.reject(source, commit, error);
    return { status: 'Error', commit, ...none, error };
  }

  /** Holds the commit until a person confirms it; audited once per held commit. */
  private async hold(
    source: FleetSource,
    commit: string,
    author: string,
    held: NonNullable<DeletionJudgement['held']>,
  ): Promise<FleetOutcome> {
    const { pending, error } = held;
    const already = (source.pendingDeletion as PendingDeletion | null)?.commit === commit;
    await this.db.prisma.fleetSource.update({
      where: { id: source.id },
      data: { status: 'Held', error: toJson(error), pendingDeletion: toJson(pending), seenCommit: commit },
    });
    if (!already)
      await this.audit.record({
        actor: systemActor('fleet-repo'),
        action: 'fleet.deletion-held',
        scope: `fleet-source:${source.id}`,
        details: { ...pending, author },
      });
    return { status: 'Held', commit, ...none, error };
  }

  /** The targets of the appsets this source manages now, and of those the plan deletes. */
  private async targetsAtStake(
    sourceId: string,
    managed: readonly ManagedEntry[],
    plan: FleetPlan,
  ): Promise<{ current: number; deleting: number }> {
    const names = managed
      .filter((m) => m.fleetSourceId === sourceId && m.kind === 'ApplicationSet')
      .map((m) => m.name);
    if (names.length === 0) return { current: 0, deleting: 0 };
    const rows = await this.db.prisma.applicationSet.findMany({
      where: { name: { in: names } },
      select: { name: true, _count: { select: { targets: true } } },
    });
    const going = new Set(plan.delete.filter((m) => m.kind === 'ApplicationSet').map((m) => m.name));
    let current = 0;
    let deleting = 0;
    for (const r of rows) {
      current += r._count.targets;
      if (going.has(r.name)) deleting += r._count.targets;
    }
    return { current, deleting };
  }

  /** `Name <email>` of the commit's author, read from the mirror. */
  private async authorOf(repositoryId: string, commit: string): Promise<string> {
    const { stdout } = await run('git', [
      '-C',
      this.mirrors.mirrors.dirOf(repositoryId),
      'log',
      '-1',
      '--format=%an <%ae>',
      commit,
    ]);
    return stdout.trim();
  }
}

/** The refusal of a commit declaring an object another fleet source manages. */
function conflictError(plan: FleetPlan): Record<string, unknown> {
  const c = plan.conflicts[0];
  return {
    code: 'managed-elsewhere',
    message: `${keyOf(c?.object.kind ?? '', c?.object.name ?? '')} (${c?.object.file ?? ''}) is already managed by fleet source ${c?.owner.fleetSourceId ?? ''} (${c?.owner.file ?? ''}); nothing changed`,
    path: c?.object.file,
  };
}
