import { Injectable, Logger } from '@nestjs/common';
import { RenderService } from '../render/render.service.js';
import { Database } from '../db/database.js';
import { ExpansionRequests } from '../wakeups/expansion-requests.service.js';

/** One chart a target renders: what its source asks for and the version it was rendered at. */
interface ChartUse {
  appSetId: string;
  repoUrl: string;
  chart: string;
  targetRevision: string;
  revision: string;
}

/**
 * Charts from Helm repositories and registries move without a Git commit: a version published
 * within a target's range must reach the fleet, as Argo CD re-resolves on every refresh. This
 * resolves every (repository, chart, range) the targets use once — through the same cached index as
 * an expansion — and asks for an expansion of each appset whose targets were rendered at another
 * version. Nothing else changes here: the expansion renders, records and releases as always.
 */
@Injectable()
export class ChartVersionWatch {
  private readonly logger = new Logger(ChartVersionWatch.name);

  constructor(
    private readonly db: Database,
    private readonly render: RenderService,
    private readonly expansions: ExpansionRequests,
  ) {}

  /** The appsets asked to expand, and how many distinct ranges were resolved. */
  async check(): Promise<{ resolved: number; failed: number; expanded: string[] }> {
    const uses = await this.chartUses();
    const byRange = new Map<string, ChartUse[]>();
    for (const u of uses) {
      const key = `${u.repoUrl}\0${u.chart}\0${u.targetRevision}`;
      byRange.set(key, [...(byRange.get(key) ?? []), u]);
    }
    const moved = new Set<string>();
    let failed = 0;
    for (const group of byRange.values()) {
      const [first] = group;
      if (!first) continue;
      try {
        const now = await this.render.resolveChart(first.repoUrl, first.chart, first.targetRevision || '*');
        for (const u of group) if (u.revision !== now.version) moved.add(u.appSetId);
      } catch (e) {
        // A repository that is down keeps what was rendered; the next expansion reports the error.
        failed++;
        this.logger.warn(`${first.repoUrl} ${first.chart}: ${(e as Error).message}`);
      }
    }
    for (const id of moved) await this.expansions.requestExpand(id);
    return { resolved: byRange.size, failed, expanded: [...moved] };
  }

  /**
   * Every chart source of a live target: a single source whose repository is not a Git one the hub
   * mirrors (its `desiredRevision` is the chart version), and each chart entry of `sources`.
   */
  private chartUses(): Promise<ChartUse[]> {
    return this.db.prisma.$queryRaw<ChartUse[]>`
      SELECT t."appSetId", t."repoUrl", t."sourcePath" AS "chart", t."targetRevision",
             t."desiredRevision" AS "revision"
      FROM "Target" t
      WHERE t."sources" IS NULL AND t."deletionState" IS NULL AND t."desiredRevision" IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM "Repository" r WHERE r."url" = t."repoUrl")
      UNION ALL
      SELECT t."appSetId", s->>'repoUrl', s->>'chart', COALESCE(s->>'targetRevision', ''), s->>'revision'
      FROM "Target" t, jsonb_array_elements(t."sources") s
      WHERE t."sources" IS NOT NULL AND t."deletionState" IS NULL AND s->>'chart' IS NOT NULL`;
  }
}
