import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiQuery, ApiTags } from '@nestjs/swagger';
import { z } from 'zod';
import { AdminTokenGuard } from '../common/admin-token.guard.js';
import { parseInput } from '../common/hub-error.js';
import { Database } from '../db/database.js';
import { syncStatusOf } from './sync-status.js';

const targetsQuery = z.object({ cluster: z.string().optional(), appSet: z.string().optional() });
const syncRunsQuery = z.object({
  target: z.string().optional(),
  cluster: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: z.string().optional(),
});

@ApiTags('targets')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1')
export class TargetsController {
  constructor(private readonly db: Database) {}

  @Get('targets')
  @ApiQuery({ name: 'cluster', required: false })
  @ApiQuery({ name: 'appSet', required: false })
  async targets(@Query() query: unknown) {
    const q = parseInput(targetsQuery, query, 'query');
    const rows = await this.db.prisma.target.findMany({
      where: {
        ...(q.cluster ? { cluster: { name: q.cluster } } : {}),
        ...(q.appSet ? { appSet: { name: q.appSet } } : {}),
      },
      orderBy: { name: 'asc' },
      include: { cluster: { select: { name: true } }, appSet: { select: { name: true } } },
    });
    return rows.map((t) => ({
      id: t.id,
      name: t.name,
      cluster: t.cluster.name,
      appSet: t.appSet.name,
      namespace: t.namespace,
      repoUrl: t.repoUrl,
      path: t.sourcePath,
      targetRevision: t.targetRevision,
      desiredRevision: t.desiredRevision,
      bundleDigest: t.bundleDigest,
      syncPolicy: t.syncPolicy,
      syncStatus: syncStatusOf(t),
      health: t.health,
      healthMessage: t.healthMessage,
      lastSyncedRevision: t.lastSyncedRevision,
      lastSyncedAt: t.lastSyncedAt?.toISOString() ?? null,
      lastReportAt: t.lastReportAt?.toISOString() ?? null,
    }));
  }

  /** Newest first; pass `nextCursor` back as `cursor` for the next page. */
  @Get('sync-runs')
  @ApiQuery({ name: 'target', required: false })
  @ApiQuery({ name: 'cluster', required: false })
  @ApiQuery({ name: 'limit', required: false })
  @ApiQuery({ name: 'cursor', required: false })
  async syncRuns(@Query() query: unknown) {
    const q = parseInput(syncRunsQuery, query, 'query');
    const rows = await this.db.prisma.syncRun.findMany({
      where: {
        ...(q.target ? { target: { name: q.target } } : {}),
        ...(q.cluster ? { target: { cluster: { name: q.cluster } } } : {}),
        ...(q.target && q.cluster ? { target: { name: q.target, cluster: { name: q.cluster } } } : {}),
      },
      orderBy: [{ startedAt: 'desc' }, { id: 'desc' }],
      take: q.limit + 1,
      ...(q.cursor ? { cursor: { id: q.cursor }, skip: 1 } : {}),
      include: { target: { select: { name: true, cluster: { select: { name: true } } } } },
    });
    const page = rows.slice(0, q.limit);
    return {
      items: page.map((r) => ({
        id: r.id,
        target: r.target.name,
        cluster: r.target.cluster.name,
        revision: r.revision,
        bundleDigest: r.bundleDigest,
        trigger: r.trigger,
        outcome: r.outcome,
        message: r.message,
        startedAt: r.startedAt.toISOString(),
        finishedAt: r.finishedAt.toISOString(),
        resources: r.resources,
        reportId: r.agentReportId,
      })),
      nextCursor: rows.length > q.limit ? (page.at(-1)?.id ?? null) : null,
    };
  }
}
