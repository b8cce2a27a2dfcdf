// Every render runs under the determinism check, and its bundle is stored once by digest.
import { Inject, Injectable, Logger } from '@nestjs/common';
import pLimit, { type LimitFunction } from 'p-limit';
import { Counter } from 'prom-client';
import { AuditLog } from '../audit/audit.service.js';
import { toJson } from '../common/json.js';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { RenderError } from './render-error.js';
import type { Rendered, RenderedBundle } from './render-source.js';
import { checkResourceOptions } from './rendered-objects.js';
import { systemActor } from '@flotilla/contract';

/** One render's identity and what its record says about it. */
export interface RenderInput {
  key: string;
  /** The Git repository; null for a chart from a Helm repository. */
  repositoryId: string | null;
  repoUrl: string;
  /** The commit, or the chart version. */
  revision: string;
  /** The directory (`.` for the root), or the chart's name. */
  path: string;
  options: unknown;
  renderer: RenderedBundle['renderer'];
  /** Where errors point. */
  where: string;
}

function recordOf(input: RenderInput) {
  return {
    key: input.key,
    repositoryId: input.repositoryId,
    repoUrl: input.repositoryId === null ? input.repoUrl : null,
    revision: input.revision,
    path: input.path,
    options: toJson(input.options),
    renderer: input.renderer,
  };
}

function shownOf(input: RenderInput): string {
  return `${input.path} at ${input.revision.slice(0, 12)}`;
}

/**
 * The render records (RenderRecord: key → digest) and the bundles they name. A new input is rendered
 * twice, a known one is compared with the digest it gave before; a mismatch is recorded, counted,
 * audited and refused.
 */
@Injectable()
export class RenderRecords {
  private readonly logger = new Logger(RenderRecords.name);
  /**
   * Every render of an input runs in one of RENDER_CONCURRENCY slots: an expansion asks for all of
   * its distinct renders at once, and 1,000 charts must not become 1,000 helm processes.
   */
  private readonly slots: LimitFunction;
  private readonly renders: Counter<'renderer' | 'outcome'>;

  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    metrics: HubMetrics,
    @Inject(HUB_CONFIG) config: HubConfig,
  ) {
    this.slots = pLimit(config.render.concurrency);
    this.renders = new Counter({
      name: 'flotilla_renders_total',
      help: 'Bundle renders by renderer (plain, kustomize, helm) and outcome (ok, error, nondeterministic)',
      labelNames: ['renderer', 'outcome'],
      registers: [metrics.registry],
    });
  }

  /**
   * Runs `produce` under the determinism check and stores the bundle: a new input is rendered twice,
   * a known one is compared with the digest it gave before; a mismatch is recorded, counted, audited
   * and refused.
   */
  async checkAndStore(input: RenderInput, produce: () => Promise<Rendered>): Promise<RenderedBundle> {
    const { renderer } = input;
    let bundle: RenderedBundle;
    try {
      bundle = await this.checked(input, produce);
      await this.record(input, bundle);
    } catch (e) {
      const nondeterministic = e instanceof RenderError && e.code === 'render-nondeterministic';
      this.renders.inc({ renderer, outcome: nondeterministic ? 'nondeterministic' : 'error' });
      throw e;
    }
    this.renders.inc({ renderer, outcome: 'ok' });
    await this.storeBundle(input, bundle);
    return bundle;
  }

  /** Renders once (twice for a new input) and compares with the record's digest when there is one. */
  private async checked(input: RenderInput, produce: () => Promise<Rendered>): Promise<RenderedBundle> {
    const prior = await this.db.prisma.renderRecord.findUnique({ where: { key: input.key } });
    const first = await this.slots(produce);
    checkResourceOptions(first.manifests, input.where);
    // A new input is rendered twice; a known one is compared with what it gave before.
    const againstDigest = prior ? prior.digest : (await this.slots(produce)).digest;
    if (againstDigest !== first.digest || prior?.deterministic === false) {
      await this.flagNondeterministic(input, againstDigest, first.digest);
      throw new RenderError(
        'render-nondeterministic',
        `rendering ${shownOf(input)} gave ${againstDigest} and then ${first.digest}: the same inputs must give the same manifests (a generator with random or time-based output?)`,
        input.where,
      );
    }
    return { ...first, renderer: input.renderer };
  }

  /**
   * Insert-if-absent: another render of the same input may have recorded it meanwhile (two appsets,
   * two replicas); then its digest must be ours too.
   */
  private async record(input: RenderInput, bundle: RenderedBundle): Promise<void> {
    const { key } = input;
    const { count } = await this.db.prisma.renderRecord.createMany({
      data: [{ ...recordOf(input), digest: bundle.digest }],
      skipDuplicates: true,
    });
    if (count > 0) return;
    const existing = await this.db.prisma.renderRecord.findUniqueOrThrow({ where: { key } });
    if (existing.digest !== bundle.digest) {
      await this.flagNondeterministic(input, existing.digest, bundle.digest);
      throw new RenderError(
        'render-nondeterministic',
        `rendering ${shownOf(input)} gave ${existing.digest} and then ${bundle.digest}: the same inputs must give the same manifests`,
        input.where,
      );
    }
    await this.db.prisma.renderRecord.update({ where: { key }, data: { checkedAt: new Date() } });
  }

  /**
   * Insert-if-absent in one statement: two expansions storing the same bundle at once (a queued one
   * and a direct one) both succeed, where an upsert's read-then-insert lets one fail. A bundle
   * rendered again is made young again (at most hourly), so retention, which prunes only old
   * unreferenced bundles, cannot take it between this render and the target naming it; and if
   * retention deleted it meanwhile, the conflict is gone and this inserts it anew.
   */
  private async storeBundle(input: RenderInput, bundle: RenderedBundle): Promise<void> {
    await this.db.prisma.$executeRaw`
      INSERT INTO "Bundle" ("digest", "manifests", "repoUrl", "revision", "path")
      VALUES (${bundle.digest}, ${JSON.stringify(toJson(bundle.manifests))}::jsonb, ${input.repoUrl},
              ${input.revision}, ${input.path})
      ON CONFLICT ("digest") DO UPDATE SET "createdAt" = now()
        WHERE "Bundle"."createdAt" < now() - interval '1 hour'`;
  }

  private async flagNondeterministic(input: RenderInput, expected: string, got: string): Promise<void> {
    await this.db.prisma.renderRecord.upsert({
      where: { key: input.key },
      create: { ...recordOf(input), digest: expected, deterministic: false, conflictingDigest: got },
      update: { deterministic: false, conflictingDigest: got, checkedAt: new Date() },
    });
    await this.audit.record({
      actor: systemActor('render'),
      action: 'render.nondeterministic',
      scope: `repository:${input.repoUrl}`,
      details: {
        revision: input.revision,
        path: input.path,
        options: input.options,
        renderer: input.renderer,
        digests: [expected, got],
      },
    });
    this.logger.warn(
      `non-deterministic render of ${input.repoUrl}@${input.revision.slice(0, 12)}:${input.path}`,
    );
  }
}
