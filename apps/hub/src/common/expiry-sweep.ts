import { Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { HubConfig } from '../config/hub-config.js';

/** How often expired objects are looked for; an expiry is recorded at most this late. */
export const EXPIRY_SWEEP_MS = 5_000;

/**
 * A periodic sweep, on worker replicas only, that records the expiry of time-boxed objects (pins,
 * break-glass overrides). Serving already ignores an expired object at once; the sweep only writes the
 * close into the audit log and wakes the clusters concerned. Several replicas sweeping at once is
 * harmless as long as `sweepExpired` claims each expiry with a conditional write. One sweep at a time
 * per process, and shutdown waits for the one running.
 */
export abstract class ExpirySweep implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(this.constructor.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  /** What expires, plural, for the log ("pins", "break-glass overrides"). */
  protected abstract readonly what: string;

  protected constructor(private readonly hubConfig: HubConfig) {}

  /** Records every expiry now due; returns how many it recorded. */
  protected abstract sweepExpired(): Promise<number>;

  onApplicationBootstrap(): void {
    if (!this.hubConfig.roles.worker) return;
    this.timer = setInterval(() => {
      this.running ??= this.sweep().finally(() => (this.running = undefined));
    }, EXPIRY_SWEEP_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  private async sweep(): Promise<void> {
    try {
      const swept = await this.sweepExpired();
      if (swept > 0) this.logger.log(`${swept} ${this.what} expired`);
    } catch (e) {
      // The next sweep tries again; what expired is already ignored by assignments.
      this.logger.warn(`${this.what} expiry sweep failed: ${String(e)}`);
    }
  }
}
