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
import { chainStart } from './audit.service.js';

const TICK_MS = 60_000;
/** Events read per tick at most, so a first pass over millions of rows spreads over many ticks. */
const PER_TICK = 20_000;
const PAGE = 1_000;
/** A full pass again from the start this often: an edit to an already verified row shows up too. */
const FULL_PASS_MS = 60 * 60_000;

/**
 * Watches the audit chain for alerting (`flotilla_audit_chain_valid`): each tick verifies the events
 * written since the last one, resuming the same verifier (its last hash is the checkpoint), and an
 * hourly pass starts over. `GET /api/v1/audit/verify` stays the on-demand full check. Workers only.
 */
@Injectable()
export class AuditChainMonitor implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(AuditChainMonitor.name);
  private verifier = new ChainVerifier();
  private after: bigint | undefined;
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

  /** Verifies what was written since the last call (bounded); returns whether the chain holds. */
  async verifyNew(): Promise<boolean> {
    try {
      const fullPass = Date.now() - this.passStartedAt > FULL_PASS_MS && !this.verifier.broken;
      if (fullPass || !this.started) {
        // From the archive checkpoint, when events were pruned (and again at each full pass: a
        // prune moves it).
        const start = await chainStart(this.db.prisma);
        this.verifier = new ChainVerifier(start.hash);
        this.after = start.afterId;
        this.passStartedAt = Date.now();
        this.started = true;
      }
      for (let read = 0; read < PER_TICK && !this.verifier.broken;) {
        const rows = await this.db.prisma.auditEvent.findMany({
          ...(this.after !== undefined && { where: { id: { gt: this.after } } }),
          orderBy: { id: 'asc' },
          take: PAGE,
        });
        for (const row of rows) if (!this.verifier.next(row)) break;
        read += rows.length;
        if (rows.length === 0 || this.verifier.broken) break;
        this.after = rows[rows.length - 1]!.id;
        if (rows.length < PAGE) break;
      }
    } catch (e) {
      this.logger.warn(`audit chain check failed (tried again next minute): ${String(e)}`);
    }
    const broken = this.verifier.broken;
    if (broken && !this.reported) {
      this.reported = true;
      this.logger.error(`audit chain broken at event ${broken.id}: ${broken.message}`);
    }
    this.valid.set(broken ? 0 : 1);
    this.verified.set(this.verifier.checked);
    return !broken;
  }
}
