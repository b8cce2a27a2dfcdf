import { Controller, Get, HttpCode, Inject, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Database } from '../db/database.js';
import { JobQueues } from '../queues/job-queues.service.js';
import { Public } from '../auth/roles.decorator.js';
import { devModeWarnings, HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { livenessViewSchema, readinessViewSchema } from '@flotilla/contract';
import { ApiAnswer } from '../common/api-docs.js';

@ApiTags('health')
@Public()
@Controller()
export class ProbesController {
  constructor(
    private readonly db: Database,
    private readonly queues: JobQueues,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  /** Liveness: the process answers. */
  @Get('healthz')
  @HttpCode(200)
  @ApiAnswer(livenessViewSchema)
  healthz(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** Readiness: PostgreSQL (or PGlite) and Redis both answer. A development hub says so here too. */
  @Get('readyz')
  @ApiAnswer(readinessViewSchema, { status: [200, 503] })
  async readyz(@Res({ passthrough: true }) res: Response) {
    const [database, redis] = await Promise.all([
      this.db.ping().then(
        () => 'ok',
        (e: unknown) => `error: ${String(e)}`,
      ),
      this.queues.ping().then(
        () => 'ok',
        (e: unknown) => `error: ${String(e)}`,
      ),
    ]);
    const ready = database === 'ok' && redis === 'ok';
    res.status(ready ? 200 : 503);
    const warnings = devModeWarnings(this.config);
    return {
      status: ready ? 'ready' : 'not-ready',
      checks: { database, redis },
      ...(warnings.length > 0 ? { mode: 'development' as const, warnings } : {}),
    };
  }
}
