import { BullModule } from '@nestjs/bullmq';
import { type DynamicModule, Module, type Provider, type Type } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import { QUEUE_NAMES } from '@flotilla/contract';
import type { RedisOptions as BullRedisOptions } from 'bullmq';
import { HUB_CONFIG, type HubConfig } from './config/hub-config.js';
import { Database } from './db/database.js';
import { ApiErrorFilter } from './common/api-error.filter.js';
import { AdminTokenGuard } from './auth/admin-token.guard.js';
import { PeopleAuthGuard } from './auth/people-auth.guard.js';
import { RequestInputInterceptor } from './common/request-input.interceptor.js';
import { OpenApiController, OpenApiDocument } from './common/openapi.controller.js';
import { requestLogOptions } from './common/request-log.js';
import { HubLogger } from './common/hub-logger.js';
import { ApiTokensService } from './api-tokens/api-tokens.service.js';
import { ApiTokenAuthenticator } from './auth/api-token-authenticator.js';
import { ApiTokensController } from './api-tokens/api-tokens.controller.js';
import { OidcSignIn } from './auth/oidc-sign-in.service.js';
import { OidcSignInController } from './auth/oidc-sign-in.controller.js';
import { RateLimiter } from './auth/rate-limiter.service.js';
import { AuditLog } from './audit/audit.service.js';
import { AuditController } from './audit/audit.controller.js';
import { ProbesController } from './probes/probes.controller.js';
import { HubMetrics } from './metrics/hub-metrics.service.js';
import { HttpMetricsInterceptor } from './metrics/http-metrics.interceptor.js';
import { MetricsController } from './metrics/metrics.controller.js';
import { QueueMetrics } from './queues/queue-metrics.service.js';
import { FleetMetrics } from './fleet-view/fleet-metrics.service.js';
import { ReasonMetrics } from './fleet-view/reason-metrics.service.js';
import { AuditChainMonitor } from './audit/audit-chain-monitor.service.js';
import { redisOptions } from './db/redis-options.js';
import { JobQueues } from './queues/job-queues.service.js';
import { ExpansionRequests } from './wakeups/expansion-requests.service.js';
import { ClusterWakeups } from './wakeups/cluster-wakeups.service.js';
import { QUEUE_HANDLERS, WorkerBootstrap } from './pipeline/worker-bootstrap.service.js';
import { GitMirrorsService } from './sources/git/git-mirrors.service.js';
import { ClustersService } from './clusters/clusters.service.js';
import { ClusterCapabilitiesService } from './clusters/cluster-capabilities.service.js';
import { ClustersController } from './clusters/clusters.controller.js';
import { RepositoriesService } from './sources/repositories/repositories.service.js';
import { RepositoriesController } from './sources/repositories/repositories.controller.js';
import { SourceVerifications } from './sources/verification/source-verifications.service.js';
import { VerificationController } from './sources/verification/verification.controller.js';
import { ChartProvenance } from './sources/verification/chart-provenance.service.js';
import { ChartVerificationController } from './sources/verification/chart-verification.controller.js';
import { ChartVerificationSettingsService } from './sources/verification/chart-verification-settings.service.js';
import { VerificationSettingsService } from './sources/verification/verification-settings.service.js';
import { SourceSyncProcessor } from './pipeline/source-sync.processor.js';
import { AppSetsService } from './desired-state/appsets.service.js';
import { AppSetsController } from './desired-state/appsets.controller.js';
import { AppSetExpander } from './desired-state/appset-expander.service.js';
import { DesiredTargets } from './desired-state/desired-targets.service.js';
import { ExpansionRenders } from './desired-state/expansion-renders.service.js';
import { ExpansionRepositories } from './desired-state/expansion-repositories.service.js';
import { ExpansionTransaction } from './desired-state/expansion-transaction.service.js';
import { SourcePlacement } from './desired-state/source-placement.service.js';
import { AppSetExpandProcessor } from './pipeline/appset-expand.processor.js';
import { ChartVersionsProcessor } from './pipeline/chart-versions.processor.js';
import { ChartVersionWatch } from './desired-state/chart-versions.service.js';
import { ChartCredentialsController } from './render/chart-credentials.controller.js';
import { ChartCredentialsService } from './render/chart-credentials.service.js';
import { RenderService } from './render/render.service.js';
import { RenderRecords } from './render/render-records.service.js';
import { RenderTools } from './render/render-tools.service.js';
import { PlainRenderer } from './render/plain-renderer.js';
import { KustomizeRenderer } from './render/kustomize-renderer.js';
import { ChartRenderer } from './render/chart-renderer.js';
import { MultiSourceRenderer } from './render/multi-source-renderer.js';
import { ExplainService } from './fleet-view/explain.service.js';
import { ExplainController } from './fleet-view/explain.controller.js';
import { RolloutProcessor } from './pipeline/rollout.processor.js';
import { RolloutsService } from './release/rollouts/rollouts.service.js';
import { AdmissionPolicies } from './release/policies/admission-policies.service.js';
import { PolicyGate } from './release/policies/policy-gate.service.js';
import { RolloutControls } from './release/rollouts/rollout-controls.service.js';
import { RolloutQueries } from './release/rollouts/rollout-queries.service.js';
import { ReleaseAfterExpansion } from './desired-state/release-after-expansion.js';
import { RolloutsController } from './release/rollouts/rollouts.controller.js';
import { PinsService } from './release/pins/pins.service.js';
import { PinExpiry } from './release/pins/pin-expiry.service.js';
import { PinsController } from './release/pins/pins.controller.js';
import { RestoredPins } from './release/pins/restored-pins.service.js';
import { RevertRangeService } from './release/reverts/revert-range.service.js';
import { RevertsService } from './release/reverts/reverts.service.js';
import { RevertsController } from './release/reverts/reverts.controller.js';
import { RevertProcessor } from './pipeline/revert.processor.js';
import { WriteAccessService } from './sources/repositories/write-access.service.js';
import { TargetsController } from './fleet-view/targets.controller.js';
import { SyncHistory } from './history/sync-history.service.js';
import { TargetOperations } from './operations/target-operations.service.js';
import { PendingOperations } from './operations/pending-operations.service.js';
import { TargetDeletions } from './desired-state/target-deletions.service.js';
import { TargetOperationsController } from './operations/target-operations.controller.js';
import { AgentGatewayController } from './agent-gateway/agent-gateway.controller.js';
import { AgentGatewayService } from './agent-gateway/agent-gateway.service.js';
import { AgentRegistration } from './agent-gateway/agent-registration.service.js';
import { AgentBundles } from './agent-gateway/agent-bundles.service.js';
import { ClusterLastSeen } from './agent-gateway/cluster-last-seen.service.js';
import { AgentAnnouncement } from './agent-gateway/agent-announcement.service.js';
import { AutoRollbackSettings } from './agent-gateway/auto-rollback-settings.service.js';
import { HealthRulesService } from './health-rules/health-rules.service.js';
import { AgentAuthGuard } from './agent-gateway/agent-auth.guard.js';
import { AgentCredentials } from './agent-gateway/agent-credentials.service.js';
import { ReportIngestService } from './agent-gateway/report-ingest.service.js';
import { WebhooksController } from './sources/webhooks/webhooks.controller.js';
import { WebhooksService } from './sources/webhooks/webhooks.service.js';
import { WindowsService } from './release/windows/windows.service.js';
import { WindowsController } from './release/windows/windows.controller.js';
import { TargetWindowsController } from './release/windows/target-windows.controller.js';
import { BreakGlassService } from './break-glass/break-glass.service.js';
import { BreakGlassController } from './break-glass/break-glass.controller.js';
import { BreakGlassExpiry } from './break-glass/break-glass-expiry.service.js';
import { ProjectPolicy } from './projects/project-policy.service.js';
import { ProjectsService } from './projects/projects.service.js';
import { ProjectsController } from './projects/projects.controller.js';
import { FleetRepoService } from './fleet-repo/fleet-repo.service.js';
import { FleetReconciler } from './fleet-repo/fleet-reconciler.service.js';
import { FleetApply } from './fleet-repo/fleet-apply.service.js';
import { FleetFollowUp } from './fleet-repo/fleet-follow-up.service.js';
import { FleetRejections } from './fleet-repo/fleet-rejections.service.js';
import { FleetReconcileProcessor } from './pipeline/fleet-reconcile.processor.js';
import { FleetSourcesController } from './fleet-repo/fleet-sources.controller.js';
import { HubPlanService } from './plan/hub-plan.service.js';
import { PlanController } from './plan/plan.controller.js';
import { FleetOwnership } from './ownership/fleet-ownership.service.js';
import { NotificationsService } from './notifications/notifications.service.js';
import { NotificationsController } from './notifications/notifications.controller.js';
import { NotificationDispatcher } from './notifications/notification-dispatcher.service.js';
import { NotifyProcessor } from './pipeline/notify.processor.js';
import { AgentOfflineSweep } from './notifications/agent-offline-sweep.service.js';
import { TargetReasons } from './fleet-view/target-reasons.service.js';
import { FleetViewService } from './fleet-view/fleet-view.service.js';
import { FleetEvents } from './fleet-view/fleet-events.service.js';
import { FleetViewController } from './fleet-view/fleet-view.controller.js';
import { RetentionService } from './history/retention.service.js';
import { PartitionKeeper } from './db/partition-keeper.service.js';
import { AuditArchive } from './audit/audit-archive.service.js';
import { RetentionProcessor } from './pipeline/retention.processor.js';

/** One handler per queue of the contract's registry (checked at start by WorkerBootstrap). */
const HANDLERS = [
  SourceSyncProcessor,
  AppSetExpandProcessor,
  RolloutProcessor,
  FleetReconcileProcessor,
  NotifyProcessor,
  RetentionProcessor,
  ChartVersionsProcessor,
  RevertProcessor,
];

/** The hub's services, stage by stage in the order of docs/architecture.md. */
const SERVICES: Provider[] = [
  // foundation: partitions, tokens, metrics, audit, queues, wake-ups
  PartitionKeeper,
  ApiTokensService,
  ApiTokenAuthenticator,
  OidcSignIn,
  RateLimiter,
  HubMetrics,
  QueueMetrics,
  AuditLog,
  AuditChainMonitor,
  AuditArchive,
  JobQueues,
  ClusterWakeups,
  ExpansionRequests,
  AdminTokenGuard,
  BreakGlassService,
  BreakGlassExpiry,
  FleetOwnership,
  // projects and sources
  ProjectPolicy,
  ProjectsService,
  GitMirrorsService,
  RepositoriesService,
  WriteAccessService,
  SourceVerifications,
  ChartProvenance,
  ChartVerificationSettingsService,
  VerificationSettingsService,
  WebhooksService,
  // render
  RenderService,
  RenderRecords,
  RenderTools,
  PlainRenderer,
  KustomizeRenderer,
  ChartRenderer,
  MultiSourceRenderer,
  ChartCredentialsService,
  // desired state
  AppSetsService,
  AppSetExpander,
  DesiredTargets,
  SourcePlacement,
  ExpansionRepositories,
  ExpansionRenders,
  ExpansionTransaction,
  ChartVersionWatch,
  TargetDeletions,
  // release and operations
  AdmissionPolicies,
  PolicyGate,
  RolloutsService,
  { provide: ReleaseAfterExpansion, useExisting: RolloutsService },
  RolloutControls,
  RolloutQueries,
  PinsService,
  PinExpiry,
  RestoredPins,
  RevertRangeService,
  RevertsService,
  WindowsService,
  TargetOperations,
  PendingOperations,
  // clusters and the agent gateway
  ClustersService,
  ClusterCapabilitiesService,
  HealthRulesService,
  AgentGatewayService,
  AgentRegistration,
  AgentBundles,
  ClusterLastSeen,
  AgentAnnouncement,
  AutoRollbackSettings,
  ReportIngestService,
  AgentAuthGuard,
  AgentCredentials,
  // history, the fleet view, notifications, the fleet repository
  SyncHistory,
  RetentionService,
  TargetReasons,
  FleetViewService,
  FleetEvents,
  FleetMetrics,
  ReasonMetrics,
  ExplainService,
  NotificationsService,
  NotificationDispatcher,
  AgentOfflineSweep,
  FleetRepoService,
  FleetReconciler,
  FleetApply,
  FleetFollowUp,
  FleetRejections,
  HubPlanService,
];

/** The people's API (the api role). */
const API_CONTROLLERS: Type[] = [
  ClustersController,
  RepositoriesController,
  VerificationController,
  ChartVerificationController,
  ChartCredentialsController,
  AppSetsController,
  TargetsController,
  TargetOperationsController,
  ExplainController,
  RolloutsController,
  PinsController,
  RevertsController,
  AuditController,
  ApiTokensController,
  OidcSignInController,
  AgentGatewayController,
  WebhooksController,
  WindowsController,
  TargetWindowsController,
  BreakGlassController,
  ProjectsController,
  FleetSourcesController,
  PlanController,
  NotificationsController,
  FleetViewController,
];

export interface AppModuleOptions {
  /** Replaces the database the config names (tests pass an in-memory PGlite). */
  database?: () => Promise<Database>;
  /** Where the request log goes instead of stdout (tests read it for leaked secrets). */
  logStream?: NodeJS.WritableStream;
}

@Module({})
export class AppModule {
  /** The hub, wired for the roles the config asks for. */
  static forRoot(config: HubConfig, options: AppModuleOptions = {}): DynamicModule {
    const services: Provider[] = [
      { provide: HUB_CONFIG, useValue: config },
      { provide: HubLogger, useValue: new HubLogger(requestLogOptions(config, options.logStream)) },
      { provide: Database, useFactory: options.database ?? (() => Database.open(config.database)) },
      { provide: APP_FILTER, useClass: ApiErrorFilter },
      { provide: APP_INTERCEPTOR, useClass: HttpMetricsInterceptor },
      // After the guards: bodies are read only for callers a route lets in.
      { provide: APP_INTERCEPTOR, useClass: RequestInputInterceptor },
      OpenApiDocument,
      // Every route not marked @Public() needs a people credential with the route's role.
      { provide: APP_GUARD, useClass: PeopleAuthGuard },
      ...SERVICES,
    ];
    const controllers: Type[] = [ProbesController, MetricsController];
    if (config.roles.api) {
      controllers.push(...API_CONTROLLERS);
      if (config.openApi === 'authenticated') controllers.push(OpenApiController);
    }
    if (config.roles.worker) {
      services.push(...HANDLERS, { provide: QUEUE_HANDLERS, useValue: HANDLERS }, WorkerBootstrap);
    }
    return {
      module: AppModule,
      imports: [
        BullModule.forRoot({ connection: bullConnection(config.redis.url), prefix: config.redis.prefix }),
        BullModule.registerQueue(...QUEUE_NAMES.map((name) => ({ name }))),
      ],
      controllers,
      providers: services,
    };
  }
}

function bullConnection(url: string): BullRedisOptions {
  const { retryStrategy: _ignored, ...rest } = redisOptions(url);
  return rest;
}
