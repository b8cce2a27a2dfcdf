import { Inject, Injectable } from '@nestjs/common';
import { Gauge, type Registry } from 'prom-client';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { SYNC_STATUS_SELECT, syncStatusOf } from '../desired-state/sync-status.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';

/**
 * The fleet's state as Prometheus gauges, read from the database at each scrape (so every replica
 * answers the same, and nothing is kept in memory between scrapes): one series per target like
 * Argo CD's `argocd_app_info`, one per cluster for its agent, one per active rollout. A scrape of a
 * 10,000-target fleet reads three indexed tables once each.
 */
@Injectable()
export class FleetMetrics {
  constructor(metrics: HubMetrics, db: Database, @Inject(HUB_CONFIG) config: HubConfig) {
    // A registry serialises its metrics in order and calls each one's collect() just before: the gauge
    // that reads the table comes first and fills the others, registered after it.
    registerTargetGauges(metrics.registry, db.prisma);
    registerClusterGauges(metrics.registry, db.prisma, config.rollouts.offlineAfterSeconds);
    registerRolloutGauges(metrics.registry, db.prisma);
  }
}

type Prisma = Database['prisma'];

/** One series per target, the counts by status, and how long each target has been out of sync. */
function registerTargetGauges(registry: Registry, prisma: Prisma): void {
  const registers = [registry];
  const outOfSyncSeconds = new Gauge({
    name: 'flotilla_target_out_of_sync_seconds',
    help: 'Seconds since the revision Git wants was released to the target and not yet synced (0 when synced)',
    labelNames: ['target', 'appset', 'cluster'],
    registers: [],
  });
  const targetCounts = new Gauge({
    name: 'flotilla_targets',
    help: 'Targets by sync and health status',
    labelNames: ['sync_status', 'health_status'],
    registers: [],
  });
  new Gauge({
    name: 'flotilla_target_info',
    help: 'One series per target (value 1) with its appset, project, cluster, sync and health status',
    labelNames: ['target', 'appset', 'project', 'cluster', 'namespace', 'sync_status', 'health_status'],
    registers,
    async collect() {
      const now = Date.now();
      const rows = await prisma.target.findMany({
        select: {
          name: true,
          namespace: true,
          ...SYNC_STATUS_SELECT,
          releasedAt: true,
          health: true,
          appSet: { select: { name: true, project: true } },
          cluster: { select: { name: true } },
        },
      });
      this.reset();
      targetCounts.reset();
      outOfSyncSeconds.reset();
      for (const t of rows) {
        const sync = syncStatusOf(t);
        targetCounts.inc({ sync_status: sync, health_status: t.health });
        this.set(
          {
            target: t.name,
            appset: t.appSet.name,
            project: t.appSet.project,
            cluster: t.cluster.name,
            namespace: t.namespace,
            sync_status: sync,
            health_status: t.health,
          },
          1,
        );
        const since = sync === 'Synced' ? now : (t.releasedAt?.getTime() ?? now);
        outOfSyncSeconds.set(
          { target: t.name, appset: t.appSet.name, cluster: t.cluster.name },
          Math.max(0, (now - since) / 1000),
        );
      }
    },
  });
  registry.registerMetric(outOfSyncSeconds);
  registry.registerMetric(targetCounts);
}

/** Whether each cluster's agent is connected, and when it was last seen. */
function registerClusterGauges(registry: Registry, prisma: Prisma, offlineAfterSeconds: number): void {
  const registers = [registry];
  const offlineAfterMs = offlineAfterSeconds * 1000;
  const lastSeen = new Gauge({
    name: 'flotilla_cluster_last_seen_timestamp_seconds',
    help: "Unix time of the cluster's agent's last request to the hub (absent: never seen)",
    labelNames: ['cluster'],
    registers: [],
  });
  new Gauge({
    name: 'flotilla_cluster_connected',
    help: `1 when the cluster's agent was seen within CLUSTER_OFFLINE_SECONDS (${offlineAfterSeconds} s), else 0`,
    labelNames: ['cluster'],
    registers,
    async collect() {
      const now = Date.now();
      const rows = await prisma.cluster.findMany({ select: { name: true, lastSeenAt: true } });
      this.reset();
      lastSeen.reset();
      for (const c of rows) {
        const seen = c.lastSeenAt?.getTime();
        this.set({ cluster: c.name }, seen !== undefined && now - seen <= offlineAfterMs ? 1 : 0);
        if (seen !== undefined) lastSeen.set({ cluster: c.name }, seen / 1000);
      }
    },
  });
  registry.registerMetric(lastSeen);
}

/** Each appset's latest unfinished or halted rollout, and the step it is at. */
function registerRolloutGauges(registry: Registry, prisma: Prisma): void {
  const registers = [registry];
  const rolloutStep = new Gauge({
    name: 'flotilla_rollout_step',
    help: "The step (0-based) each appset's latest unfinished or halted rollout is at",
    labelNames: ['appset', 'revision'],
    registers: [],
  });
  new Gauge({
    name: 'flotilla_rollout_info',
    help: "One series per appset's latest rollout while it is unfinished or Halted (value 1), with its status",
    labelNames: ['appset', 'revision', 'status'],
    registers,
    async collect() {
      // A halted rollout stays halted until a new revision replaces it: only each appset's latest counts.
      const rows = await prisma.rollout.findMany({
        where: { OR: [{ finishedAt: null }, { status: 'Halted' }] },
        orderBy: { createdAt: 'desc' },
        select: { revision: true, status: true, stepIndex: true, appSet: { select: { name: true } } },
      });
      const latest = new Map<string, (typeof rows)[number]>();
      for (const r of rows) if (!latest.has(r.appSet.name)) latest.set(r.appSet.name, r);
      this.reset();
      rolloutStep.reset();
      for (const r of latest.values()) {
        this.set({ appset: r.appSet.name, revision: r.revision, status: r.status }, 1);
        rolloutStep.set({ appset: r.appSet.name, revision: r.revision }, r.stepIndex);
      }
    },
  });
  registry.registerMetric(rolloutStep);
}
