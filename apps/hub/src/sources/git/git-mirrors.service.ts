import { Inject, Injectable } from '@nestjs/common';
import { HUB_CONFIG, type HubConfig } from '../../config/hub-config.js';
import { GitMirrors } from './git-mirror.js';

/** The process's one set of bare mirrors, under the configured data dir. */
@Injectable()
export class GitMirrorsService {
  readonly mirrors: GitMirrors;

  constructor(@Inject(HUB_CONFIG) config: HubConfig) {
    this.mirrors = new GitMirrors(config.dataDir, {
      connectMs: config.git.connectTimeoutSeconds * 1000,
      idleMs: config.git.idleTimeoutSeconds * 1000,
      maxMs: config.git.fetchMaxSeconds * 1000,
    });
  }
}
