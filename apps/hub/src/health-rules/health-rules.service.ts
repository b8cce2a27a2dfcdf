import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { type HealthRule } from '@flotilla/contract';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { loadHubHealthRules } from './hub-health-rules.js';

/** How a fleet repository's rule is kept in its FleetManaged row (`object`). */
export interface StoredHealthRule {
  script: string;
}

export const HEALTH_RULE_KIND = 'HealthRule';

/**
 * The custom health rules agents receive with their assignments: the hub's (FLOTILLA_HEALTH_LUA_DIR,
 * read and checked once at start) and the fleet repositories' (FleetManaged rows of kind HealthRule,
 * each with its commit), a fleet rule winning over the hub's of the same key. The hub never runs them.
 */
@Injectable()
export class HealthRulesService implements OnModuleInit {
  private readonly logger = new Logger(HealthRulesService.name);
  private hubRules: HealthRule[] = [];

  constructor(
    private readonly db: Database,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    const dir = this.config.healthRules.luaDir;
    if (dir === null) return;
    const rules = await loadHubHealthRules(dir);
    this.hubRules = rules.map((r) => ({
      key: r.key,
      script: r.script,
      source: { origin: 'hub', file: r.file },
    }));
    this.logger.log(`${rules.length} health rule(s) from ${dir}`);
  }

  /** Every rule, sorted by key (the order is part of the assignments' ETag). */
  async forAgents(): Promise<HealthRule[]> {
    const rows = await this.db.sql.query<{
      name: string;
      file: string;
      commit: string;
      object: unknown;
      repoUrl: string;
    }>(
      `SELECT m.name, m.file, m.commit, m.object, s."repoUrl"
         FROM "FleetManaged" m JOIN "FleetSource" s ON s.id = m."fleetSourceId"
        WHERE m.kind = $1`,
      [HEALTH_RULE_KIND],
    );
    const byKey = new Map(this.hubRules.map((r) => [r.key, r]));
    for (const r of rows) {
      byKey.set(r.name, {
        key: r.name,
        script: (r.object as StoredHealthRule).script,
        source: { origin: 'fleet', file: r.file, repoUrl: r.repoUrl, commit: r.commit },
      });
    }
    return [...byKey.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }
}
