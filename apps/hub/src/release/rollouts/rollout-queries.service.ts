// What people read of rollouts: the newest ones, and one rollout with every target's place in it.
import { Injectable } from '@nestjs/common';
import type { RolloutDetailView, RolloutView } from '@flotilla/contract';
import { Database } from '../../db/database.js';
import { HubError } from '../../common/hub-error.js';
import { isPaged, pageArgs, pageOf, type PageQuery } from '../../common/name-page.js';
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
  /**
   * The appset's newest rollout (or the one of `revision`), with every target's place in it: all of
   * them, or with `limit`/`cursor` one page of them in name order (an appset on a thousand clusters
   * is a quarter of a megabyte whole).
   */
  async get(appSetName: string, revision?: string, page: PageQuery = {}): Promise<RolloutDetailView> {
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
    const paged = isPaged(page);
    const args = paged ? pageArgs(page) : { where: {} };
    const [rows, targetCount] = await Promise.all([
      this.db.prisma.target.findMany({
        where: { appSetId: appSet.id, ...args.where },
        orderBy: { name: 'asc' },
        include: targetWithPlanInputs,
        ...('take' in args && { take: args.take }),
      }),
      this.db.prisma.target.count({ where: { appSetId: appSet.id } }),
    ]);
    const { rows: targets, nextCursor } = paged ? pageOf(rows, page) : { rows, nextCursor: null };
    const progress = stateOf(rollout).progress;
    return {
      ...rolloutView(rollout, appSet.name),
      targets: targets.map((t) => rolloutTargetView(t, progress, new Date())),
      targetCount,
      nextCursor,
    };
  }
}
