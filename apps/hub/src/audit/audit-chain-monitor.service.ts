import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { Counter, Gauge } from 'prom-client';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { chainLanes } from './audit-lanes.js';
import { lastFullPass, LaneWalk, recordFullPass, saveProgress, startLane } from './audit-verification.js';

const TICK_MS = 60_000;
/** Events read per tick at most, so a first pass over millions of rows spreads over many ticks. */
const PER_TICK = 20_000;
/** A full pass again from the start this often: an edit to an already verified row shows up too. */
const FULL_PASS_MS = 60 * 60_000;

/**
 * Watches the audit chain for alerting (`flotilla_audit_chain_valid`): each tick verifies, lane by
 * lane, the events written since the last one, resuming each lane's walk, and an hourly pass starts
 * over from each lane's start (so an edit to an old row shows), spread over ticks. The position is
 * per lane, never one id for all: a lower id in another lane may commit after a higher one was
 * verified, and a single position would skip it for good; within a lane, ids commit in order. As it
 * advances it stores each lane's verified position (AuditChainVerified), where `GET
 * /api/v1/audit/verify` goes on from, and a pass that reaches every lane's end (or a break) becomes
 * the last full pass (AuditFullPass). Workers only.
 *
 * A hub that starts (or restarts) resumes from the stored positions, as `GET /api/v1/audit/verify`
 * does: each lane's stored event is checked first (still there, same hash, content matching it, so a
 * rewritten tail shows), then only what follows it is read. Rereading millions of verified rows on
 * every restart is what the hourly pass is for, and it keeps its hour across restarts: a start does a
 * full pass only when the stored last one is over an hour old, found a break, or is missing.
 */
@Injectable()
export class AuditChainMonitor implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(AuditChainMonitor.name);
  private lanes = new Map<number, LaneWalk>();
  private passStartedAt = Date.now();
  /** Whether the lanes are walked from their starts (a full pass) or from their stored positions. */
  private full = true;
  /** Whether this full pass's result is stored (once it reached every lane's end, or a break). */
  private passRecorded = false;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<boolean> | undefined;
  private reported = false;
  private started = false;
  private readonly valid: Gauge;
  private readonly verified: Gauge;
  private readonly read: Counter;

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
    this.read = new Counter({
      name: 'flotilla_audit_chain_read_events_total',
      help: 'Audit events the chain monitor has read to verify them (full passes and new events; each resumed lane also rereads its stored event once)',
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
      if (!this.started) await this.resume();
      else if (Date.now() - this.passStartedAt > FULL_PASS_MS && !this.broken()) this.startPass(true);
      let read = 0;
      let caughtUp = true;
      for (const lane of await chainLanes(this.db.prisma)) {
        if (read >= PER_TICK || this.broken()) {
          caughtUp = false;
          break;
        }
        const walk = await this.walk(lane);
        const before = walk.after;
        const stepped = await walk.step(this.db.prisma, PER_TICK - read);
        read += stepped;
        this.read.inc(stepped);
        await saveProgress(this.db.prisma, walk, before);
        caughtUp &&= walk.caughtUp;
      }
      if (this.full && !this.passRecorded && (caughtUp || this.broken())) await this.recordPass();
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

  /**
   * The first tick: from the stored positions while the stored last full pass is recent and valid
   * (the next one comes an hour after it finished), else a full pass now. A break that pass found
   * is in rows the stored positions are past: a restart must find it again, not forget it.
   */
  private async resume(): Promise<void> {
    const last = await lastFullPass(this.db.prisma);
    const finishedAt = last ? Date.parse(last.finishedAt) : Number.NaN;
    const recent = last?.valid === true && Date.now() - finishedAt <= FULL_PASS_MS;
    this.startPass(!recent);
    if (recent) this.passStartedAt = finishedAt;
    this.started = true;
  }

  /** Forgets the lanes' walks: each starts again at its archive checkpoint (full) or stored position. */
  private startPass(full: boolean): void {
    this.lanes = new Map();
    this.passStartedAt = Date.now();
    this.full = full;
    this.passRecorded = false;
  }

  /**
   * A lane's walk in this pass; a lane first met (at a pass's start, or since the lane count grew)
   * starts at its checkpoint in a full pass, else after its stored position once that still holds.
   */
  private async walk(lane: number): Promise<LaneWalk> {
    let walk = this.lanes.get(lane);
    if (!walk) {
      walk = await startLane(this.db.prisma, lane, this.full);
      this.lanes.set(lane, walk);
    }
    return walk;
  }

  private async recordPass(): Promise<void> {
    const broken = this.broken();
    await recordFullPass(this.db.prisma, {
      finishedAt: new Date().toISOString(),
      valid: !broken,
      checked: [...this.lanes.values()].reduce((n, w) => n + w.verifier.checked, 0),
      ...(broken && { firstBrokenAt: broken }),
    });
    this.passRecorded = true;
  }

  /** The first break found in any lane, with its lane. */
  private broken() {
    for (const [lane, w] of this.lanes) if (w.verifier.broken) return { ...w.verifier.broken, lane };
    return undefined;
  }
}
