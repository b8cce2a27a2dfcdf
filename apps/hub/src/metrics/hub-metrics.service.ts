import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { Database } from '../db/database.js';

/** An agent counts as connected when it polled within this window (long-polls last at most 60 s). */
const CONNECTED_WINDOW_MS = 90_000;

/** Prometheus metrics, on a registry of this app's own (several hubs can share one test process). */
@Injectable()
export class HubMetrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route'>;
  readonly jobs: Counter<'queue' | 'outcome'>;
  readonly reports: Counter<'type' | 'result'>;
  readonly renders: Counter;
  readonly policyCompilations: Counter;
  readonly policyEvaluations: Counter;
  readonly notifications: Counter<'type' | 'outcome'>;
  readonly retentionPruned: Counter<'kind'>;
  readonly retentionLastRun: Gauge;
  readonly retentionPartitionsDropped: Counter<'table'>;

  constructor(db: Database) {
    collectDefaultMetrics({ register: this.registry });
    this.httpRequests = new Counter({
      name: 'flotilla_http_requests_total',
      help: 'HTTP requests answered, by route and status',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
    });
    this.httpDuration = new Histogram({
      name: 'flotilla_http_request_duration_seconds',
      help: 'HTTP request duration (long-polls included)',
      labelNames: ['method', 'route'],
      buckets: [0.005, 0.02, 0.1, 0.5, 2, 10, 60],
      registers: [this.registry],
    });
    this.jobs = new Counter({
      name: 'flotilla_queue_jobs_total',
      help: 'BullMQ jobs finished by this process, by queue and outcome',
      labelNames: ['queue', 'outcome'],
      registers: [this.registry],
    });
    this.reports = new Counter({
      name: 'flotilla_agent_reports_total',
      help: 'Agent reports received, by type and result (accepted, duplicate, or expired: older than the replay horizon)',
      labelNames: ['type', 'result'],
      registers: [this.registry],
    });
    this.renders = new Counter({
      name: 'flotilla_expansion_renders_total',
      help: 'Renders expansions started: one per distinct repository, commit, path and source options, however many targets share it',
      registers: [this.registry],
    });
    this.policyCompilations = new Counter({
      name: 'flotilla_policy_set_compilations_total',
      help: "Compilations of the fleet's admission policies by this process: one per fleet revision of them",
      registers: [this.registry],
    });
    this.policyEvaluations = new Counter({
      name: 'flotilla_policy_evaluations_total',
      help: 'Bundles evaluated against admission policies by this process: one per distinct bundle, namespace and set of bindings, however many targets share it',
      registers: [this.registry],
    });
    this.notifications = new Counter({
      name: 'flotilla_notification_deliveries_total',
      help: 'Notification sends by destination type and outcome (sent, retried: an attempt failed, failed: gave up)',
      labelNames: ['type', 'outcome'],
      registers: [this.registry],
    });
    this.retentionPruned = new Counter({
      name: 'flotilla_retention_pruned_total',
      help: 'Rows retention removed, by kind (reportPayloadsTrimmed, reportIdsDeleted, syncRunsDeleted, bundlesDeleted, sourceVerificationsDeleted, chartVerificationsDeleted)',
      labelNames: ['kind'],
      registers: [this.registry],
    });
    this.retentionPartitionsDropped = new Counter({
      name: 'flotilla_retention_partitions_dropped_total',
      help: 'Whole monthly partitions retention dropped, by table',
      labelNames: ['table'],
      registers: [this.registry],
    });
    this.retentionLastRun = new Gauge({
      name: 'flotilla_retention_last_run_timestamp_seconds',
      help: 'When this process last finished a retention run (Unix time); 0 = not yet',
      registers: [this.registry],
    });
    new Gauge({
      name: 'flotilla_agents_connected',
      help: `Clusters whose agent polled in the last ${CONNECTED_WINDOW_MS / 1000} s`,
      registers: [this.registry],
      async collect() {
        const since = new Date(Date.now() - CONNECTED_WINDOW_MS);
        this.set(await db.prisma.cluster.count({ where: { lastSeenAt: { gte: since } } }));
      },
    });
  }
}
