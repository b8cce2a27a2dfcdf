import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { type Report } from '@flotilla/contract';
import { type HubEndpoint } from '../hub/hub-client.js';

/** What the gauges read at scrape time; each agent passes its own (several can share a process). */
export interface AgentGaugeSources {
  queuedBatches: () => number;
  setAsideFiles: () => number;
  droppedBatches: () => number;
  watches: () => number;
  cachedObjects: () => number;
  targets: () => number;
  events: () => { written: number; dropped: number; failed: number };
}

/**
 * The agent's Prometheus metrics, on a registry of its own: syncs, heals, fights and drift counted
 * from the reports it makes; report queue depth, watches and cache size read at scrape; and the
 * round trip of every hub call by endpoint and outcome.
 */
export class AgentMetrics {
  readonly registry = new Registry();
  private readonly syncs: Counter<'trigger' | 'outcome'>;
  private readonly drift: Counter<'state'>;
  private readonly heals: Counter;
  private readonly fights: Counter;
  private readonly hubDuration: Histogram<'endpoint' | 'outcome'>;

  constructor(sources: AgentGaugeSources, options: { processMetrics?: boolean } = {}) {
    const registers = [this.registry];
    // Process metrics (RSS, heap, event-loop lag) only where someone scrapes them: the event-loop
    // monitor costs a little in every agent a test process runs.
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry });
    this.syncs = new Counter({
      name: 'flotilla_agent_syncs_total',
      help: 'Sync runs finished, by trigger (auto, manual, self-heal, rollback) and outcome',
      labelNames: ['trigger', 'outcome'],
      registers,
    });
    this.drift = new Counter({
      name: 'flotilla_agent_drift_total',
      help: 'Drift reports made, by state (detected, healed, contested, tolerated)',
      labelNames: ['state'],
      registers,
    });
    this.heals = new Counter({
      name: 'flotilla_agent_heals_total',
      help: 'Objects healed (drift undone and confirmed by a fresh read)',
      registers,
    });
    this.fights = new Counter({
      name: 'flotilla_agent_fights_total',
      help: 'Objects given up as contested: another writer kept undoing the heal',
      registers,
    });
    this.hubDuration = new Histogram({
      name: 'flotilla_agent_hub_request_duration_seconds',
      help: 'Round trip of calls to the hub, by endpoint and outcome (ok, or the error code); long-polls included',
      labelNames: ['endpoint', 'outcome'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 60],
      registers,
    });
    const gauge = (name: string, help: string, read: () => number): void => {
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    };
    gauge(
      'flotilla_agent_report_queue_batches',
      'Report batches on disk waiting for the hub',
      sources.queuedBatches,
    );
    gauge(
      'flotilla_agent_reports_set_aside',
      'Files of reports the hub refused as invalid, set aside for an operator',
      sources.setAsideFiles,
    );
    gauge(
      'flotilla_agent_report_batches_dropped',
      'Report batches dropped since start because the queue was full',
      sources.droppedBatches,
    );
    gauge(
      'flotilla_agent_watches',
      'List+watch loops: one per kind, or per kind and namespace (FLOTILLA_NAMESPACES)',
      sources.watches,
    );
    gauge('flotilla_agent_cached_objects', 'Objects held in the watch caches', sources.cachedObjects);
    gauge('flotilla_agent_targets', 'Targets this agent reconciles', sources.targets);
    new Gauge({
      name: 'flotilla_agent_kube_events',
      help: 'Kubernetes Events since start, by result (written, dropped: queue full, failed: refused)',
      labelNames: ['result'],
      registers,
      collect() {
        const e = sources.events();
        this.set({ result: 'written' }, e.written);
        this.set({ result: 'dropped' }, e.dropped);
        this.set({ result: 'failed' }, e.failed);
      },
    });
  }

  /** Counts what the reports say happened. */
  observeReports(reports: readonly Report[]): void {
    for (const r of reports) {
      if (r.type === 'sync') this.syncs.inc({ trigger: r.trigger, outcome: r.outcome });
      else if (r.type === 'drift') {
        this.drift.inc({ state: r.state });
        if (r.state === 'healed') this.heals.inc();
        if (r.state === 'contested') this.fights.inc();
      }
    }
  }

  observeHubCall(endpoint: HubEndpoint, outcome: string, seconds: number): void {
    this.hubDuration.observe({ endpoint, outcome }, seconds);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
