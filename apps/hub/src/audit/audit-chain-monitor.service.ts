import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { Gauge } from 'prom-client';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { ChainVerifier } from './audit-chain.js';
import { chainLanes, chainStart } from './audit-lanes.js';

const TICK_MS = 60_000;
/** Events read per tick at most, so a first pass over millions of rows spreads over many ticks. */
const PER_TICK = 20_000;
const PAGE = 1_000;
/** A full pass again from the start this often: an edit to an already verified row shows up too. */
const FULL_PASS_MS = 60 * 60_000;

/** Where a lane's verification stands: its verifier (whose last hash is the checkpoint) and last id. */
interface LanePosition {
  verifier: ChainVerifier;
  after: bigint | undefined;
}

/**
 * Watches the audit chain for alerting (`flotilla_audit_chain_valid`): each tick verifies, lane by
 * lane, the events written since the last one, resuming each lane's verifier, and an hourly pass
 * starts over. The position is per lane, never one id for all: a lower id in another lane may commit
 * after a higher one was verified, and a single position would skip it for good; within a lane, ids
 * commit in order. `GET /api/v1/audit/verify` stays the on-demand full check. Workers only.
 */
@Injectable()
export class AuditChainMonitor implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(AuditChainMonitor.name);
  private lanes = new Map<number, LanePosition>();
  private passStartedAt = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<boolean> | undefined;
  private reported = false;
  private started = false;
  private readonly valid: Gauge;
  private readonly verified: Gauge;

  constructor(
    private readonly db: Database,
    metrics: HubMetrics,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {
    this.valid = new Gauge({
      name: 'flotilla_audit_chain_valid',
      help: '1 while every audit event verified so far links to the one before and matches its hash; 0 once one does not',
      registers: [metrics.registry],
    });
    this.verified = new Gauge({
      name: 'flotilla_audit_chain_verified_events',
      help: 'Audit events the current verification pass has checked',
      registers: [metrics.registry],
    });
    this.valid.set(1);
  }

  onApplicationBootstrap(): void {
    if (!this.config.roles.worker) return;
    const tick = () => (this.running ??= this.verifyNew().finally(() => (this.running = undefined)));
    void tick();
    this.timer = setInterval(() => void tick(), TICK_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** Verifies what was written since the last call (bounded); returns whether every lane holds. */
  async verifyNew(): Promise<boolean> {
    try {
      const fullPass = Date.now() - this.passStartedAt > FULL_PASS_MS && !this.broken();
      if (fullPass || !this.started) {
        // Each lane again from its archive checkpoint (a prune moves it).
        this.lanes = new Map();
        this.passStartedAt = Date.now();
        this.started = true;
      }
      let read = 0;
      for (const lane of await chainLanes(this.db.prisma)) {
        if (read >= PER_TICK || this.broken()) break;
        read += await this.verifyLane(lane, PER_TICK - read);
      }
    } catch (e) {
      this.logger.warn(`audit chain check failed (tried again next minute): ${String(e)}`);
    }
    const broken = this.broken();
    if (broken && !this.reported) {
      this.reported = true;
      this.logger.error(`audit chain broken at event ${broken.id} (lane ${broken.lane}): ${broken.message}`);
    }
    this.valid.set(broken ? 0 : 1);
    this.verified.set([...this.lanes.values()].reduce((n, p) => n + p.verifier.checked, 0));
    return !broken;
  }

  /** A lane's new events, at most `budget` (in pages); returns how many were read. */
  private async verifyLane(lane: number, budget: number): Promise<number> {
    let position = this.lanes.get(lane);
    if (!position) {
      // A lane first met (at a pass's start, or since the lane count grew) starts at its checkpoint.
      const start = await chainStart(this.db.prisma, lane);
      position = { verifier: new ChainVerifier(start.hash), after: start.afterId };
      this.lanes.set(lane, position);
    }
    let read = 0;
    while (read < budget && !position.verifier.broken) {
      const rows = await this.db.prisma.auditEvent.findMany({
        where: { lane, ...(position.after !== undefined && { id: { gt: position.after } }) },
        orderBy: { id: 'asc' },
        take: PAGE,
      });
      for (const row of rows) if (!position.verifier.next(row)) break;
      read += rows.length;
      if (rows.length === 0 || position.verifier.broken) break;
      position.after = rows[rows.length - 1]!.id;
      if (rows.length < PAGE) break;
    }
    return read;
  }

  /** The first break found in any lane, with its lane. */
  private broken() {
    for (const [lane, p] of this.lanes) if (p.verifier.broken) return { ...p.verifier.broken, lane };
    return undefined;
  }
}
