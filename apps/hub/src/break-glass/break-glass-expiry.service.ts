import { Inject, Injectable } from '@nestjs/common';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { ExpirySweep } from '../common/expiry-sweep.js';
import { BreakGlassService } from './break-glass.service.js';

/**
 * Records break-glass expiry. Assignments already leave an expired override out, and agents drop it
 * at `expiresAt` on their own; this sweep writes the close ("expired") into the audit log and wakes
 * the clusters so they fetch assignments without it. Each close is claimed with a conditional update.
 */
@Injectable()
export class BreakGlassExpiry extends ExpirySweep {
  protected readonly what = 'break-glass overrides';

  constructor(
    private readonly breakGlass: BreakGlassService,
    @Inject(HUB_CONFIG) config: HubConfig,
  ) {
    super(config);
  }

  protected sweepExpired(): Promise<number> {
    return this.breakGlass.sweepExpired();
  }
}
