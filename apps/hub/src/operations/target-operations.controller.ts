import {
  type AuditActor,
  bulkSyncViewSchema,
  targetDeletionViewSchema,
  targetOperationListSchema,
  targetOperationViewSchema,
} from '@flotilla/contract';
import { Body, Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { ApiAnswer, ApiInput, ApiQueryOf } from '../common/api-docs.js';
import {
  batchQuerySchema,
  bulkSyncRequestSchema,
  cancelRequestSchema,
  singleSyncRequestSchema,
} from './sync-request-schemas.js';
import { Actor } from '../auth/actor.js';
import { AdminTokenGuard } from '../auth/admin-token.guard.js';
import { Roles } from '../auth/roles.decorator.js';
import { TargetOperations } from './target-operations.service.js';
import { deleteRequestSchema, TargetDeletions } from '../desired-state/target-deletions.service.js';

@ApiTags('targets')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1')
export class TargetOperationsController {
  constructor(
    private readonly operations: TargetOperations,
    private readonly deletions: TargetDeletions,
  ) {}

  /**
   * Deletes the target with its objects: its agent runs the PreDelete hooks, deletes what the target
   * tracks (Delete=false and helm.sh/resource-policy: keep stay), runs PostDelete hooks and reports;
   * then the target goes. Admin only: it removes workloads from a cluster.
   */
  @Post('targets/:name/delete')
  @Roles('admin')
  @HttpCode(202)
  @ApiInput(deleteRequestSchema, 'TargetDeletionRequest')
  @ApiAnswer(targetDeletionViewSchema, { status: 202 })
  delete(@Param('name') name: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    return this.deletions.request(name, body, actor);
  }

  /**
   * Asks the target's agent to sync it now (also with automated sync off), once. Windows that deny
   * manual syncs, break-glass, pins and project rules still apply: a refused run closes as Blocked.
   */
  @Post('targets/:name/sync')
  @Roles('operator')
  @HttpCode(202)
  @ApiInput(singleSyncRequestSchema, 'SyncRequest', {
    example: { reason: 'roll out the config fix now', prune: true },
  })
  @ApiAnswer(targetOperationViewSchema, { status: 202 })
  sync(@Param('name') name: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    return this.operations.requestSync(name, body, actor);
  }

  /**
   * Asks every target of an appset, of clusters matching a label selector, or both, to sync once
   * (as `targets/:name/sync`, with `appSet`, `clusterSelector` and `preview`): all in one go or none.
   */
  @Post('targets/sync')
  @Roles('operator')
  @HttpCode(202)
  @ApiInput(bulkSyncRequestSchema, 'BulkSyncRequest')
  @ApiAnswer(bulkSyncViewSchema, { status: 202 })
  bulkSync(@Body() body: unknown, @Actor() actor: AuditActor) {
    return this.operations.requestBulkSync(body, actor);
  }

  /** Withdraws a sync request its agent has not run yet. */
  @Post('operations/:id/cancel')
  @Roles('operator')
  @HttpCode(200)
  @ApiInput(cancelRequestSchema, 'StopOperationRequest')
  @ApiAnswer(targetOperationViewSchema)
  cancel(@Param('id') id: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    return this.operations.cancel(id, body, actor);
  }

  /**
   * Stops a sync request its agent may be running: at its next safe point (before the next object,
   * or while waiting for a wave or a hook), reported Terminated with what it applied.
   */
  @Post('operations/:id/terminate')
  @Roles('operator')
  @HttpCode(200)
  @ApiInput(cancelRequestSchema, 'StopOperationRequest')
  @ApiAnswer(targetOperationViewSchema)
  terminate(@Param('id') id: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    return this.operations.terminate(id, body, actor);
  }

  /** The operations of one request for many targets (`?batchId=`), by target name. */
  @Get('operations')
  @ApiQueryOf(batchQuerySchema)
  @ApiAnswer(targetOperationListSchema)
  batch(@Query() query: unknown) {
    return this.operations.listBatch(query);
  }

  /** The target's operations, newest first (at most 100), with their state. */
  @Get('targets/:name/operations')
  @ApiAnswer(targetOperationListSchema)
  list(@Param('name') name: string) {
    return this.operations.list(name);
  }
}
