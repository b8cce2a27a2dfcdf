import { Controller, Get, Param, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { targetWindowsViewSchema, type TargetWindowsView } from '@flotilla/contract';
import { ApiAnswer } from '../../common/api-docs.js';
import {
  targetWindowStatus,
  windowsForTarget,
  type NamedSyncWindow,
  type TargetWindowStatus,
} from '@flotilla/windows';
import { AdminTokenGuard } from '../../auth/admin-token.guard.js';
import { HubError } from '../../common/hub-error.js';
import { Database } from '../../db/database.js';
import { BreakGlassService } from '../../break-glass/break-glass.service.js';
import { WindowsService } from './windows.service.js';

@ApiTags('windows')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/targets')
export class TargetWindowsController {
  constructor(
    private readonly db: Database,
    private readonly windows: WindowsService,
    private readonly breakGlass: BreakGlassService,
  ) {}

  /** Which windows apply to the target, whether it may sync now, when that changes, what is pending. */
  @Get(':name/windows')
  @ApiAnswer(targetWindowsViewSchema)
  async windowsOf(@Param('name') name: string): Promise<TargetWindowsView> {
    const target = await this.db.prisma.target.findUnique({
      where: { name },
      include: { cluster: { select: { name: true } }, appSet: { select: { name: true, project: true } } },
    });
    if (!target) throw HubError.notFound('target', name);
    const now = new Date();
    const subject = {
      application: target.name,
      namespace: target.namespace,
      cluster: target.cluster.name,
      project: target.appSet.project,
    };
    const named = await this.windows.named();
    const status: TargetWindowStatus = targetWindowStatus(named, subject, now);
    const overrides =
      (
        await this.breakGlass.activeFor(
          [{ name: target.name, clusterName: target.cluster.name, appSetName: target.appSet.name }],
          now,
        )
      ).get(target.name) ?? [];
    const lastRun = await this.db.prisma.syncRun.findFirst({
      where: { targetId: target.id, dryRun: false },
      orderBy: [{ startedAt: 'desc' }, { createdAt: 'desc' }],
    });
    const synced =
      target.lastSyncedRevision === target.desiredRevision && target.lastSyncedDigest === target.bundleDigest;
    const bypass = overrides.some((b) => b.allowSyncOutsideWindows);
    const pending =
      // A blocked sync waits until the target syncs; a blocked self-heal until the next run, which
      // is recorded whether it heals or not (the target was already at its revision).
      lastRun && lastRun.outcome === 'Blocked' && (!synced || lastRun.trigger === 'self-heal')
        ? {
            revision: lastRun.revision,
            trigger: lastRun.trigger,
            since: lastRun.startedAt.toISOString(),
            message: lastRun.message,
            eligibleAt: bypass ? now.toISOString() : (status.nextOpen?.toISOString() ?? null),
          }
        : null;
    const applying = windowsForTarget(named, subject);
    return {
      target: target.name,
      cluster: target.cluster.name,
      at: now.toISOString(),
      windows: applying.map((w) => ({
        name: w.name,
        kind: w.window.kind,
        schedule: w.window.schedule,
        duration: w.window.duration,
        timeZone: w.window.timeZone,
        active: status.active.includes(w.name),
      })),
      canSync: status.canSync,
      canSyncManually: status.canSyncManually,
      nextOpen: status.nextOpen?.toISOString() ?? null,
      heldBy: status.canSync ? [] : holdingWindows(applying, status.active),
      nextClose: status.nextClose?.toISOString() ?? null,
      breakGlass: overrides,
      pending,
    };
  }
}

/** The active deny windows, else (no allow window active) the allow windows it waits for. */
function holdingWindows(applying: readonly NamedSyncWindow[], active: readonly string[]): string[] {
  const of = (kind: 'allow' | 'deny', isActive: boolean) =>
    applying.filter((w) => w.window.kind === kind && active.includes(w.name) === isActive).map((w) => w.name);
  const deny = of('deny', true);
  if (deny.length > 0) return deny;
  return of('allow', true).length > 0 ? [] : of('allow', false);
}
