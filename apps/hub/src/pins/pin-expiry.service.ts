import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { PinsService } from './pins.service.js';

/** How often expired pins are looked for; an expiry is recorded at most this late. */
export const PIN_EXPIRY_SWEEP_MS = 5_000;

/**
 * Records pin expiry. Assignments already ignore a pin past `expiresAt`; this sweep removes it,
 * writes `target.pin-expired` into the audit log and wakes the cluster so its agent goes back to
 * the release at once. Runs on worker replicas; several sweeping at once is harmless, since each
 * removal is claimed with a conditional delete.
 */
@Injectable()
export class PinExpiry implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(PinExpiry.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly pins: PinsService,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.roles.worker) return;
    this.timer = setInterval(() => {
      this.running ??= this.sweep().finally(() => (this.running = undefined));
    }, PIN_EXPIRY_SWEEP_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  private async sweep(): Promise<void> {
    try {
      const swept = await this.pins.sweepExpired();
      if (swept > 0) this.logger.log(`${swept} pin(s) expired`);
    } catch (e) {
      // The next sweep tries again; an expired pin is already ignored by assignments.
      this.logger.warn(`pin expiry sweep failed: ${String(e)}`);
    }
  }
}
