import {
  type AuditActor,
  clusterListingSchema,
  clusterViewSchema,
  registeredClusterViewSchema,
} from '@flotilla/contract';
import { Body, Controller, Get, Param, Post, Query, UseGuards } from '@nestjs/common';

import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';

import { Actor } from '../auth/actor.js';

import { AdminTokenGuard } from '../auth/admin-token.guard.js';

import { parseInput } from '../common/hub-error.js';

import { ApiPageQuery, isPaged, parsePageQuery } from '../common/name-page.js';

import { ClustersService, createClusterSchema } from './clusters.service.js';

import { ApiAnswer, ApiInput } from '../common/api-docs.js';

import { ExpansionRequests } from '../wakeups/expansion-requests.service.js';

@ApiTags('clusters')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/clusters')
export class ClustersController {
  constructor(
    private readonly clusters: ClustersService,
    private readonly expansions: ExpansionRequests,
  ) {}

  /** Adds a cluster and returns its single-use bootstrap token (shown only here). */
  @Post()
  @ApiInput(createClusterSchema, 'CreateClusterRequest', {
    example: { name: 'prod-eu-1', labels: { env: 'prod', region: 'eu' } },
  })
  @ApiAnswer(registeredClusterViewSchema, { status: 201 })
  async create(@Body() body: unknown, @Actor() actor: AuditActor) {
    const created = await this.clusters.create(parseInput(createClusterSchema, body), actor);
    // A new cluster can match cluster generators: every appset is looked at again.
    await this.expansions.requestExpandAll();
    return created;
  }

  /** By name; with `limit` or `cursor`, one page `{items, nextCursor}` (see common/name-page.ts). */
  @Get()
  @ApiPageQuery()
  @ApiAnswer(clusterListingSchema)
  list(@Query() query: unknown) {
    const q = parsePageQuery(query);
    return isPaged(q) ? this.clusters.page(q) : this.clusters.list();
  }

  @Get(':name')
  @ApiAnswer(clusterViewSchema)
  get(@Param('name') name: string) {
    return this.clusters.get(name);
  }

  @Post(':name/bootstrap-tokens')
  @ApiAnswer(registeredClusterViewSchema, { status: 201 })
  issueToken(@Param('name') name: string, @Actor() actor: AuditActor) {
    return this.clusters.issueBootstrapToken(name, actor);
  }

  @Post(':name/revoke-credential')
  @ApiAnswer(clusterViewSchema, { status: 201 })
  revoke(@Param('name') name: string, @Actor() actor: AuditActor) {
    return this.clusters.revokeCredential(name, actor);
  }
}
