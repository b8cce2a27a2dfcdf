import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { BreakGlassService } from './break-glass.service.js';

/** How often expired overrides are looked for; an expiry is recorded at most this late. */
export const EXPIRY_SWEEP_MS = 5_000;

/**
 * Records break-glass expiry. Assignments already leave an expired override out, and agents drop it
 * at `expiresAt` on their own; this sweep writes the close ("expired") into the audit log and wakes
 * the clusters so they fetch assignments without it. Runs on worker replicas; several replicas
 * sweeping at once is harmless, since each close is claimed with a conditional update.
 */
@Injectable()
export class BreakGlassExpiry implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(BreakGlassExpiry.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly breakGlass: BreakGlassService,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.roles.worker) return;
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
      const swept = await this.breakGlass.sweepExpired();
      if (swept > 0) this.logger.log(`${swept} break-glass override(s) expired`);
    } catch (e) {
      // The next sweep tries again; an expired override is already out of every assignment.
      this.logger.warn(`break-glass expiry sweep failed: ${String(e)}`);
    }
  }
}
