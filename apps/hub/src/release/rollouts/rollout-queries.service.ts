// What people read of rollouts: the newest ones, and one rollout with every target's place in it.
import { Injectable } from '@nestjs/common';
import type { RolloutDetailView, RolloutView } from '@flotilla/contract';
import { Database } from '../../db/database.js';
import { HubError } from '../../common/hub-error.js';
import { stateOf, targetWithPlanInputs } from './rollout-records.js';
import { rolloutTargetView, rolloutView } from './rollout-view.js';

@Injectable()
export class RolloutQueries {
  constructor(private readonly db: Database) {}

  async list(appSetName?: string): Promise<RolloutView[]> {
    const rows = await this.db.prisma.rollout.findMany({
      where: appSetName ? { appSet: { name: appSetName } } : {},
      orderBy: [{ createdAt: 'desc' }],
      take: 200,
      include: { appSet: { select: { name: true } } },
    });
    return rows.map((r) => rolloutView(r, r.appSet.name));
  }

  /** The appset's newest rollout (or the one of `revision`), with every target's place in it. */
  async get(appSetName: string, revision?: string): Promise<RolloutDetailView> {
    const appSet = await this.db.prisma.applicationSet.findUnique({ where: { name: appSetName } });
    if (!appSet) throw HubError.notFound('appset', appSetName);
    const rollout = await this.db.prisma.rollout.findFirst({
      where: { appSetId: appSet.id, ...(revision ? { revision } : {}) },
      orderBy: { createdAt: 'desc' },
    });
    if (!rollout)
      throw new HubError(
        404,
        'not-found',
        `appset "${appSetName}" has no rollout${revision ? ` of ${revision}` : ''}`,
      );
    const targets = await this.db.prisma.target.findMany({
      where: { appSetId: appSet.id },
      orderBy: { name: 'asc' },
      include: targetWithPlanInputs,
    });
    const progress = stateOf(rollout).progress;
    return {
      ...rolloutView(rollout, appSet.name),
      targets: targets.map((t) => rolloutTargetView(t, progress, new Date())),
    };
  }
}
