import { Inject, Injectable, Logger } from '@nestjs/common';
import { Counter } from 'prom-client';
import { HUB_CONFIG, type HubConfig } from '../../config/hub-config.js';
import { Database } from '../../db/database.js';
import { HubMetrics } from '../../metrics/hub-metrics.service.js';
import { JobQueues } from '../../queues/job-queues.service.js';
import { normaliseRepoUrl, type PushEvent } from './webhook-payload.js';
import type { WebhookProvider } from './webhook-signature.js';

export type WebhookOutcome =
  'queued' | 'unmatched' | 'ping' | 'ignored' | 'disabled' | 'unauthorized' | 'invalid';

/** Turns verified push deliveries into immediate fetches of the repositories they name. */
@Injectable()
export class WebhooksService {
  private readonly logger = new Logger(WebhooksService.name);
  private readonly deliveries: Counter<'provider' | 'outcome'>;

  constructor(
    private readonly db: Database,
    private readonly queues: JobQueues,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
    metrics: HubMetrics,
  ) {
    this.deliveries = new Counter({
      name: 'flotilla_webhook_deliveries_total',
      help: 'Git webhook deliveries, by provider and outcome',
      labelNames: ['provider', 'outcome'],
      registers: [metrics.registry],
    });
  }

  get secret(): string | null {
    return this.config.webhooks.secret;
  }

  count(provider: WebhookProvider | 'unknown', outcome: WebhookOutcome): void {
    this.deliveries.inc({ provider, outcome });
  }

  /** Registered repositories any of the push's URLs names, each with a source-sync queued. */
  async queueFetches(push: PushEvent): Promise<{ matched: string[]; queued: number }> {
    const wanted = new Set(push.repoUrls.map(normaliseRepoUrl));
    const repos = await this.db.prisma.repository.findMany({ select: { id: true, url: true } });
    const matched = repos
      .filter((r) => wanted.has(normaliseRepoUrl(r.url)))
      .map((r) => r.id)
      .sort();
    for (const repositoryId of matched) {
      // Keyed by the pushed commit: a redelivered push collapses, a new push always runs.
      await this.queues.enqueue(
        'source-sync',
        { repositoryId, reason: 'webhook' },
        { variant: `push.${push.after}` },
      );
    }
    if (matched.length > 0)
      this.logger.log(`push to ${push.ref} (${push.after}): fetching ${matched.join(', ')}`);
    return { matched, queued: matched.length };
  }
}
