import {
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  Param,
  Post,
  Put,
  Query,
  Req,
  Res,
  UseGuards,
} from '@nestjs/common';
import { ApiBearerAuth, ApiQuery, ApiTags } from '@nestjs/swagger';
import {
  AGENT_REFUSAL,
  assignmentsResponseSchema,
  bundleBatchResponseSchema,
  bundleSchema,
  capabilitiesResponseSchema,
  registerResponseSchema,
  reportBatchResponseSchema,
  rotateResponseSchema,
  bundleBatchRequestSchema,
  clusterCapabilitiesSchema,
  registerRequestSchema,
  reportBatchSchema,
  type AssignmentsResponse,
  type Bundle,
  type CapabilitiesResponse,
  type RegisterResponse,
  type ReportBatchResponse,
  type RotateResponse,
} from '@flotilla/contract';
import type { Response } from 'express';
import { z } from 'zod';
import { HubError, parseInput } from '../common/hub-error.js';
import { ApiAnswer, ApiInput } from '../common/api-docs.js';
import { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';
import { isAutomaticRollback } from '../release/rollouts/automatic-rollback.js';
import { Public } from '../auth/roles.decorator.js';
import { AgentAuthGuard, type AgentRequest } from './agent-auth.guard.js';
import { AgentGatewayService } from './agent-gateway.service.js';
import { AgentRegistration } from './agent-registration.service.js';
import { AgentBundles } from './agent-bundles.service.js';
import { ClusterLastSeen } from './cluster-last-seen.service.js';
import { AgentAnnouncement } from './agent-announcement.service.js';
import { etagMatches } from './etag.js';
import { AgentCredentials } from './agent-credentials.service.js';
import { ReportIngestService } from './report-ingest.service.js';
import { partitionStorable, refusedReportEvents } from './storable-reports.js';
import { AuditLog } from '../audit/audit.service.js';
import { ClusterCapabilitiesService } from '../clusters/cluster-capabilities.service.js';

const waitSchema = z.coerce.number().int().min(0).max(60).default(30);

/** The pull API agents call (paths and bodies from the contract's agent-protocol). */
@ApiTags('agent')
// Not a people route: agents authenticate with their cluster credential (AgentAuthGuard).
@Public()
@Controller('api/agent/v1')
export class AgentGatewayController {
  constructor(
    private readonly gateway: AgentGatewayService,
    private readonly registration: AgentRegistration,
    private readonly bundles: AgentBundles,
    private readonly lastSeen: ClusterLastSeen,
    private readonly announcement: AgentAnnouncement,
    private readonly reports: ReportIngestService,
    private readonly wakeups: ClusterWakeups,
    private readonly credentials: AgentCredentials,
    private readonly audit: AuditLog,
    private readonly capabilities: ClusterCapabilitiesService,
  ) {}

  @Post('register')
  @HttpCode(200)
  @ApiInput(registerRequestSchema)
  @ApiAnswer(registerResponseSchema)
  register(@Body() body: unknown): Promise<RegisterResponse> {
    return this.registration.register(parseInput(registerRequestSchema, body));
  }

  /** A new credential for this agent's cluster; the presented one works for a short grace period more. */
  @Post('rotate')
  @HttpCode(200)
  @ApiAnswer(rotateResponseSchema)
  @ApiBearerAuth()
  @UseGuards(AgentAuthGuard)
  rotate(@Req() req: AgentRequest): Promise<RotateResponse> {
    return this.credentials.rotate(req.cluster, req.credentialGeneration);
  }

  /**
   * What the agent's cluster serves (discovery): its charts render with it as `.Capabilities`. A
   * change re-expands the appsets; the same report again changes nothing.
   */
  @Put('capabilities')
  @HttpCode(200)
  @ApiInput(clusterCapabilitiesSchema)
  @ApiAnswer(capabilitiesResponseSchema)
  @ApiBearerAuth()
  @UseGuards(AgentAuthGuard)
  async reportCapabilities(@Req() req: AgentRequest, @Body() body: unknown): Promise<CapabilitiesResponse> {
    this.lastSeen.touch(req.cluster);
    return this.capabilities.report(req.cluster, parseInput(clusterCapabilitiesSchema, body));
  }

  /**
   * Long-poll: with `If-None-Match` equal to the current ETag, holds the request until the cluster's
   * desired set changes (200) or `wait` seconds pass (304). A re-poll whose ETag this replica knows is
   * still current (nothing woke the cluster since it computed it) waits without reading the database.
   */
  @Get('assignments')
  @ApiQuery({ name: 'wait', required: false, description: 'seconds to hold the poll (0-60, default 30)' })
  @ApiAnswer(assignmentsResponseSchema, {
    description: 'the desired set (304 when If-None-Match is current)',
  })
  @ApiBearerAuth()
  @UseGuards(AgentAuthGuard)
  async assignments(
    @Req() req: AgentRequest,
    @Res() res: Response,
    @Query('wait') waitRaw: string | undefined,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
  ): Promise<void> {
    const wait = parseInput(waitSchema, waitRaw, 'query parameter wait (seconds, 0-60)');
    const cluster = req.cluster;
    this.lastSeen.touch(cluster);
    await this.announcement.note(cluster, req.headers);
    // Listen before reading (or trusting a remembered ETag), so a change landing in between wakes us.
    const listener = this.wakeups.listen(cluster.id);
    const stop = () => listener.close();
    // The response's close (not the request's) tells that the agent went away mid-wait.
    res.once('close', stop);
    try {
      const deadline = Date.now() + wait * 1000;
      let current: AssignmentsResponse | undefined;
      let etag = this.gateway.knownEtag(cluster);
      if (etag === undefined || !etagMatches(ifNoneMatch, etag)) {
        current = await this.gateway.assignments(cluster.id, cluster.name);
        etag = current.etag;
      }
      while (etagMatches(ifNoneMatch, etag) || !current) {
        const left = deadline - Date.now();
        if (left <= 0 || this.wakeups.stopping || res.destroyed) {
          res.status(304).setHeader('ETag', etag).end();
          return;
        }
        if (!(await listener.next(left))) continue; // time is up (or the hub is stopping): 304 above
        current = await this.gateway.assignments(cluster.id, cluster.name);
        etag = current.etag;
      }
      res.status(200).setHeader('ETag', etag).json(current);
    } finally {
      res.off('close', stop);
      listener.close();
    }
  }

  /**
   * Many bundles in one request (see `bundleBatchResponseSchema`): what the cluster's targets want of
   * `digests`, and the rest listed as refused. At most BUNDLE_BATCH_MAX digests (400 beyond, path
   * `digests`).
   */
  @Post('bundles/batch')
  @HttpCode(200)
  @ApiInput(bundleBatchRequestSchema)
  @ApiAnswer(bundleBatchResponseSchema)
  @ApiBearerAuth()
  @UseGuards(AgentAuthGuard)
  async bundleBatch(@Req() req: AgentRequest, @Body() body: unknown, @Res() res: Response): Promise<void> {
    const { digests } = parseInput(bundleBatchRequestSchema, body);
    // Right after a long-poll answer this replica knows which bundles the cluster is served.
    const json = await this.bundles.bundleBatch(req.cluster, digests, this.gateway.knownDigests(req.cluster));
    res.status(200).type('application/json').send(json);
  }

  @Get('bundles/:digest')
  @ApiAnswer(bundleSchema)
  @ApiBearerAuth()
  @UseGuards(AgentAuthGuard)
  async bundle(
    @Req() req: AgentRequest,
    @Param('digest') digest: string,
    @Res({ passthrough: true }) res: Response,
  ): Promise<Bundle> {
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) {
      throw new HubError(
        400,
        'invalid-request',
        'a bundle digest looks like sha256:<64 hex digits>',
        'digest',
      );
    }
    const bundle = await this.bundles.bundle(req.cluster, digest);
    // Content-addressed: the same digest is the same bytes forever.
    res.setHeader('Cache-Control', 'private, max-age=31536000, immutable');
    res.setHeader('ETag', `"${digest}"`);
    return bundle;
  }

  @Post('reports')
  @HttpCode(200)
  @ApiInput(reportBatchSchema)
  @ApiAnswer(reportBatchResponseSchema)
  @ApiBearerAuth()
  @UseGuards(AgentAuthGuard)
  async reportBatch(@Req() req: AgentRequest, @Body() body: unknown): Promise<ReportBatchResponse> {
    const batch = parseReportBatch(body);
    this.lastSeen.touch(req.cluster);
    // A report with text PostgreSQL cannot store is refused alone (and audited); the batch goes on.
    const { storable, refused } = partitionStorable(batch.reports);
    await this.audit.recordMany(refusedReportEvents(req.cluster.name, refused));
    const result = {
      ...(await this.reports.ingestBatch(req.cluster.id, storable)),
      ...(refused.length > 0 && { refused }),
    };
    // An automatic rollback pins the target where the agent put it: the cluster's assignments
    // changed without a release, so anything remembered of them (its ETag) is stale.
    if (storable.some(isAutomaticRollback)) {
      await this.wakeups.notify([req.cluster.id]);
    }
    return result;
  }
}

/**
 * A batch that does not match the contract is answered with the typed `reports-invalid`: the agent
 * sets aside only reports so refused (anything else, a proxy's 400 too, it keeps and sends again).
 */
function parseReportBatch(body: unknown) {
  try {
    return parseInput(reportBatchSchema, body);
  } catch (err) {
    if (!(err instanceof HubError) || err.code !== 'invalid-request') throw err;
    throw new HubError(400, AGENT_REFUSAL.reportsInvalid, err.message, err.path, err.details);
  }
}
