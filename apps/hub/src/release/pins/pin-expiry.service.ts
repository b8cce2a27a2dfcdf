import { Inject, Injectable } from '@nestjs/common';
import { HUB_CONFIG, type HubConfig } from '../../config/hub-config.js';
import { ExpirySweep } from '../../common/expiry-sweep.js';
import { PinsService } from './pins.service.js';

/**
 * Records pin expiry. Assignments already ignore a pin past `expiresAt`; this sweep removes it, writes
 * `target.pin-expired` into the audit log and wakes the cluster so its agent goes back to the release
 * at once. Each removal is claimed with a conditional delete.
 */
@Injectable()
export class PinExpiry extends ExpirySweep {
  protected readonly what = 'pins';

  constructor(
    private readonly pins: PinsService,
    @Inject(HUB_CONFIG) config: HubConfig,
  ) {
    super(config);
  }

  protected sweepExpired(): Promise<number> {
    return this.pins.sweepExpired();
  }
}
