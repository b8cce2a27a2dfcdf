import { z } from 'zod';
import { apiAnswers, apiInputs } from './api-schemas.js';
import { kubeObjectSchema, objectRefSchema } from './kube-object.js';
import { healthStatusSchema, resourceActionSchema, syncOutcomeSchema, syncTriggerSchema } from './status.js';
import { syncWindowSchema } from './sync-window.js';
import { ignoreRuleSchema } from './ignore-rule.js';
import { healthRuleSchema } from './health-rule.js';
import { projectRestrictionsSchema } from './project-restrictions.js';

/**
 * The pull protocol. The hub never connects to a cluster: agents call these endpoints,
 * authenticated with `Authorization: Bearer <agent credential>` (except register).
 */
export const AGENT_API = {
  register: '/api/agent/v1/register',
  assignments: '/api/agent/v1/assignments',
  bundle: (digest: string) => `/api/agent/v1/bundles/${encodeURIComponent(digest)}`,
  /** Many bundles in one request (`POST`, body `BundleBatchRequest`); agents older than it use `bundle`. */
  bundleBatch: '/api/agent/v1/bundles/batch',
  reports: '/api/agent/v1/reports',
  /** Trades the current credential for a new one; the old one keeps working for a short grace period. */
  rotate: '/api/agent/v1/rotate',
  /** `PUT`, body `ClusterCapabilities`: what the cluster serves, for rendering its charts. */
  capabilities: '/api/agent/v1/capabilities',
} as const;

/** Field manager used for every server-side apply the agent makes. */
export const FIELD_MANAGER = 'flotilla';
/**
 * Field manager of the agent's client-side applies (ServerSideApply=false), kubectl's
 * `kubectl-client-side-apply` in Flotilla's name: its writes are Updates, told apart from both.
 */
export const CLIENT_SIDE_APPLY_FIELD_MANAGER = 'flotilla-client-side-apply';
/** Annotation on every applied object naming the target that owns it (used for prune and drift). */
export const TRACKING_ANNOTATION = 'flotilla.dev/tracking-id';
/**
 * Label on every applied object, beside the annotation: the agent lists and watches only objects
 * that carry it, so the rest of the cluster (every other Secret and ConfigMap) costs it nothing.
 * A label value cannot hold every target name (63 characters), so which target owns an object
 * stays in the annotation.
 */
export const TRACKING_LABEL = 'flotilla.dev/tracked';
export const TRACKING_LABEL_VALUE = 'true';

export const registerRequestSchema = z.object({
  clusterName: z.string().min(1),
  bootstrapToken: z.string().min(1),
  agentVersion: z.string().optional(),
});
export type RegisterRequest = z.infer<typeof registerRequestSchema>;

export const registerResponseSchema = z.object({
  clusterId: z.string(),
  clusterName: z.string(),
  credential: z.string(),
  expiresAt: z.iso.datetime().nullable(),
});
export type RegisterResponse = z.infer<typeof registerResponseSchema>;

/**
 * What the agent's cluster serves, read from discovery (`/version`, `/api`, `/apis`). The hub renders
 * the cluster's charts with it as Helm's `.Capabilities` (`helm template --kube-version`,
 * `--api-versions`), as Argo CD does with the destination cluster's. The agent sends it at start and
 * whenever it changes (an upgraded cluster, a CRD installed); the hub stores it on the cluster.
 */
export const clusterCapabilitiesSchema = z.object({
  /** `/version`'s gitVersion, e.g. `v1.31.4` or `v1.30.2-eks-1a2b3c`. */
  kubeVersion: z
    .string()
    .max(64)
    .regex(/^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]*)?$/, 'must be a Kubernetes version such as v1.31.4'),
  /**
   * Every served group/version (`v1`, `apps/v1`, `example.com/v1alpha1`), sorted, without repeats. A
   * version is any DNS label, as a CRD's may be (`v1` by convention, not by rule).
   */
  apiVersions: z
    .array(
      z
        .string()
        .max(317)
        .regex(
          /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[a-z]([-a-z0-9]*[a-z0-9])?$/,
          'must be a group/version such as apps/v1',
        ),
    )
    .max(5000),
});
export type ClusterCapabilities = z.infer<typeof clusterCapabilitiesSchema>;

/** `PUT capabilities` answers whether the report changed what the hub held (then charts render anew). */
export const capabilitiesResponseSchema = z.object({ changed: z.boolean() });
export type CapabilitiesResponse = z.infer<typeof capabilitiesResponseSchema>;

/** `POST rotate` answers like register: the cluster and its new credential (shown once). */
export const rotateResponseSchema = registerResponseSchema;
export type RotateResponse = RegisterResponse;

/**
 * Argo CD's `syncPolicy.retry`, durations already in milliseconds: a failed sync of a revision is
 * tried again `limit` times (−1: without end), waiting `durationMs × factor^n` before retry n, at
 * most `maxDurationMs`. Then it stays failed until a new revision or a sync a person asks for.
 */
export const retryPolicySchema = z.object({
  limit: z.number().int().min(-1),
  backoff: z.object({
    durationMs: z.number().positive(),
    factor: z.number().min(1),
    maxDurationMs: z.number().positive(),
  }),
});
export type RetryPolicy = z.infer<typeof retryPolicySchema>;

/**
 * Without `syncPolicy.retry`: what Argo CD's ApplicationSet controller gives the syncs it starts
 * (limit 5) with Argo CD's default back-off (5 s, factor 2, at most 3 min).
 */
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  limit: 5,
  backoff: { durationMs: 5_000, factor: 2, maxDurationMs: 180_000 },
};

export const syncPolicySchema = z.object({
  /** Apply new revisions without a person asking. */
  automated: z.boolean().default(true),
  /** Revert out-of-band changes to what Git says. */
  selfHeal: z.boolean().default(true),
  /** Delete objects the target tracks and no longer declares. */
  prune: z.boolean().default(true),
  /** Allow a revision that declares no objects at all to prune everything. */
  allowEmpty: z.boolean().default(false),
  /**
   * Argo CD's `RespectIgnoreDifferences=true`: when applying an object that already exists, fields
   * its ignore rules match (jsonPointers, jqPathExpressions) keep their live value. Absent = false.
   */
  respectIgnoreDifferences: z.boolean().optional(),
  /**
   * Argo CD's `CreateNamespace=true`: before anything else a sync applies the target's destination
   * namespace (with `managedNamespaceMetadata`'s labels and annotations) when the bundle does not
   * declare it. The namespace is not tracked: never pruned, never healed. Absent = false.
   */
  createNamespace: z.boolean().optional(),
  managedNamespaceMetadata: z
    .object({
      labels: z.record(z.string(), z.string()).default({}),
      annotations: z.record(z.string(), z.string()).default({}),
    })
    .optional(),
  /**
   * Argo CD's `PrunePropagationPolicy`: how a pruned object's dependents go (a Deployment's
   * ReplicaSets and Pods). Absent = foreground, Argo CD's default: the object is gone only once its
   * dependents are.
   */
  prunePropagationPolicy: z.enum(['foreground', 'background', 'orphan']).optional(),
  /**
   * Argo CD's `ApplyOutOfSyncOnly=true`: a sync applies only the objects that differ from what runs
   * (hooks still run, every object is still reported). Absent = false.
   */
  applyOutOfSyncOnly: z.boolean().optional(),
  /**
   * Argo CD's `FailOnSharedResource=true`: a sync that declares an object another target tracks fails
   * before anything is applied. Absent = false (the object is taken over, and the run says so).
   */
  failOnSharedResource: z.boolean().optional(),
  /**
   * Argo CD's `Replace=true`: objects are written whole (PUT, or created when missing) instead of
   * server-side applied. An object's own `Replace=` annotation wins. Absent = false.
   */
  replace: z.boolean().optional(),
  /**
   * Argo CD's `Force=true`: an object whose apply the API refuses as invalid is deleted and created
   * again; with `replace`, every sync re-creates it. An object's own `Force=` wins. Absent = false.
   */
  force: z.boolean().optional(),
  /**
   * Argo CD's `PruneLast=true`: objects no longer declared are pruned after every wave is applied and
   * healthy, not in their own (mirrored) wave. An object's own `PruneLast=` wins. Absent = false.
   */
  pruneLast: z.boolean().optional(),
  /**
   * Argo CD's `Validate=false`: writes ask the API server to drop fields the schema does not declare
   * (fieldValidation=Ignore) instead of refusing them (Strict). An object's own `Validate=` wins.
   * Absent = true.
   */
  validate: z.boolean().optional(),
  /**
   * Argo CD's `ServerSideApply=false`: objects are written as `kubectl apply` (client-side) writes
   * them — the last-applied-configuration annotation and a three-way patch — instead of by
   * server-side apply. An object's own `ServerSideApply=` wins. Absent = true.
   */
  serverSideApply: z.boolean().optional(),
  /** How often a failed sync is tried again. Absent = DEFAULT_RETRY_POLICY. */
  retry: retryPolicySchema.optional(),
});
export type SyncPolicy = z.infer<typeof syncPolicySchema>;

/** A time-boxed override opened by an operator during an incident. */
export const breakGlassSchema = z.object({
  id: z.string(),
  reason: z.string(),
  expiresAt: z.iso.datetime(),
  allowSyncOutsideWindows: z.boolean(),
  pauseSelfHeal: z.boolean(),
});
export type BreakGlass = z.infer<typeof breakGlassSchema>;

/** What one cluster must run for one target (ApplicationSet × cluster). */
/**
 * A sync a person asked for (`POST /api/v1/targets/:name/sync`). It travels in the assignments until
 * the agent reports a sync run carrying its id, and the agent runs each id at most once (it keeps the
 * ids it ran in its state), so a replay, a restart or another replica's answer never runs it twice.
 */
export const syncOperationSchema = z.object({
  id: z.string().min(1).max(100),
  /** Delete what the bundle no longer declares in this run, even when the appset does not prune. */
  prune: z.boolean().default(false),
  /** Ask the cluster what a sync would do (server-side apply with dryRun=All) and change nothing. */
  dryRun: z.boolean().optional(),
  /**
   * The revision the person asked for (the hub accepts only the one the target is assigned). When
   * the assignment carries another by the time the agent runs it, the run fails and applies nothing.
   */
  revision: z.string().min(1).optional(),
  /**
   * A selective sync (Argo CD's `--resource`): only these declared objects are applied; no hook
   * runs, nothing is pruned and no wave is waited for, and the target's last full sync stays as it was.
   */
  resources: z.array(objectRefSchema).min(1).max(500).optional(),
  /** Sync options for this run only (parsed by the hub from `Key=Value`), over the appset's own. */
  syncPolicy: z
    .object({
      replace: z.boolean(),
      force: z.boolean(),
      serverSideApply: z.boolean(),
      validate: z.boolean(),
      pruneLast: z.boolean(),
      applyOutOfSyncOnly: z.boolean(),
      respectIgnoreDifferences: z.boolean(),
      failOnSharedResource: z.boolean(),
      createNamespace: z.boolean(),
      prunePropagationPolicy: z.enum(['foreground', 'background', 'orphan']),
    })
    .partial()
    .optional(),
  requestedBy: z.string(),
  reason: z.string(),
  /**
   * A person asked to stop it (`POST /api/v1/operations/:id/terminate`). Running: the agent stops
   * at its next safe point (before the next object, or while waiting for a wave or a hook) and
   * reports the run `Terminated` with what it applied. Not started yet: reported `Terminated` with
   * nothing applied. Finished: nothing to do (the hub closed it with the run's outcome).
   */
  terminate: z.object({ requestedBy: z.string(), reason: z.string() }).optional(),
});
export type SyncOperation = z.infer<typeof syncOperationSchema>;

/**
 * A fleet repository's ValidatingAdmissionPolicy and binding documents as written (scoping
 * annotations included), and the params objects (ConfigMaps, or a paramKind's kind) they read.
 */
export const assignmentPoliciesSchema = z.object({
  documents: z.array(kubeObjectSchema).min(1),
  params: z.array(kubeObjectSchema).default([]),
});
export type AssignmentPolicies = z.infer<typeof assignmentPoliciesSchema>;

export const assignmentSchema = z.object({
  targetId: z.string(),
  /** Target name, unique in the fleet; also the tracking annotation value. */
  name: z.string(),
  appSet: z.string(),
  /** Default namespace for namespaced objects that do not declare one. */
  namespace: z.string(),
  /** The Git commit the bundle was rendered from. */
  revision: z.string(),
  bundleDigest: z.string(),
  syncPolicy: syncPolicySchema,
  ignoreDifferences: z.array(ignoreRuleSchema).default([]),
  /** The named windows that pick this target; `name` lets the agent say which one holds a sync. */
  windows: z.array(syncWindowSchema.extend({ name: z.string().optional() })).default([]),
  breakGlass: z.array(breakGlassSchema).default([]),
  /** The target's project as it applies to this cluster; absent means unrestricted (the default project). */
  project: projectRestrictionsSchema.optional(),
  /**
   * Set when the appset rolls out with a strategy: a new revision still Degraded or Progressing this
   * long after it was applied is rolled back by the agent to the last healthy bundle it holds (a sync
   * with trigger `rollback`). Absent: the agent never rolls back on its own.
   */
  autoRollback: z.object({ progressDeadlineSeconds: z.number().int().positive() }).optional(),
  /** Syncs people asked for and the agent has not reported yet (oldest first). */
  operations: z.array(syncOperationSchema).default([]),
  /**
   * The admission policies that apply to this target (the hub judged the bundle with them before
   * releasing it): the agent evaluates them again before applying, with the live objects, and applies
   * nothing on a Deny. Absent from older hubs, and when no binding applies: nothing to check.
   */
  policies: assignmentPoliciesSchema.optional(),
});
export type Assignment = z.infer<typeof assignmentSchema>;

/**
 * A target the hub asks this cluster to delete (a tombstone): its tracked objects are deleted, with
 * the last bundle's PreDelete and PostDelete hooks around them. It travels in the assignments until the
 * agent reports a deletion carrying its id as succeeded; the target itself is then no longer assigned.
 * Only ever sent because a person asked for it, or the appset carries Argo CD's resources finalizer:
 * a target that merely disappears from the assignments is orphaned, never deleted.
 */
export const targetDeletionSchema = z.object({
  id: z.string().min(1).max(100),
  targetId: z.string(),
  /** The target's name: only objects whose tracking annotation names it are ever deleted. */
  name: z.string().min(1),
  namespace: z.string(),
  /** The last bundle the target ran: its hooks and wave annotations say how to delete. */
  bundleDigest: z.string(),
  /** How each deleted object's dependents go. Absent = foreground, as a prune. */
  prunePropagationPolicy: z.enum(['foreground', 'background', 'orphan']).optional(),
});
export type TargetDeletion = z.infer<typeof targetDeletionSchema>;

export const assignmentsResponseSchema = z.object({
  clusterName: z.string(),
  /** Changes whenever anything in the set changes; also sent as the ETag header. */
  etag: z.string(),
  assignments: z.array(assignmentSchema),
  /** Targets to delete from this cluster (see targetDeletionSchema). Absent from older hubs: none. */
  deletions: z.array(targetDeletionSchema).optional(),
  /**
   * Custom health checks for every target of the cluster (fleet-wide), sorted by key; part of the
   * ETag, so a changed rule reaches agents like a new revision. Absent from older hubs: none, and
   * kinds without a built-in check have no health, as in Argo CD.
   */
  healthRules: z.array(healthRuleSchema).default([]),
});
export type AssignmentsResponse = z.infer<typeof assignmentsResponseSchema>;

/** A rendered, immutable set of manifests. `digest` is `sha256:<hex>` of the canonical manifests. */
export const bundleSchema = z.object({
  digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  source: z.object({ repoUrl: z.string(), revision: z.string(), path: z.string() }),
  manifests: z.array(kubeObjectSchema),
});
export type Bundle = z.infer<typeof bundleSchema>;

/** How many digests one `POST bundles/batch` may ask for; an agent wanting more sends several. */
export const BUNDLE_BATCH_MAX = 100;

export const bundleDigestSchema = z
  .string()
  .regex(/^sha256:[0-9a-f]{64}$/, 'a bundle digest looks like sha256:<64 hex digits>');

/** `POST bundles/batch`: the bundles of these digests (each at most once). */
export const bundleBatchRequestSchema = z.object({
  digests: z
    .array(bundleDigestSchema)
    .min(1)
    .max(BUNDLE_BATCH_MAX, `at most ${BUNDLE_BATCH_MAX} digests per request; send the rest in another`),
});
export type BundleBatchRequest = z.infer<typeof bundleBatchRequestSchema>;

/**
 * The answer to `POST bundles/batch`. `bundles` holds every asked-for bundle one of the cluster's
 * targets wants (released or pinned), each once, in no set order; `refused` lists the others — not
 * assigned to this cluster, or not stored — without telling which (as the single endpoint's 404),
 * and the hub audits each foreign digest as `agent.access-denied`. A refused digest usually means the
 * assignments changed since the agent read them: poll again.
 */
export const bundleBatchResponseSchema = z.object({
  bundles: z.array(bundleSchema),
  refused: z.array(z.string()).default([]),
});
export type BundleBatchResponse = z.infer<typeof bundleBatchResponseSchema>;

/** The sync phases a hook runs in (Argo CD's `argocd.argoproj.io/hook` values that run during a sync). */
export const HOOK_PHASES = ['PreSync', 'Sync', 'PostSync', 'SyncFail'] as const;
export const hookPhaseSchema = z.enum(HOOK_PHASES);
export type HookPhase = z.infer<typeof hookPhaseSchema>;

/** The phases a hook runs in when its target is deleted (Argo CD's PreDelete and PostDelete). */
export const DELETE_HOOK_PHASES = ['PreDelete', 'PostDelete'] as const;
export const deleteHookPhaseSchema = z.enum(DELETE_HOOK_PHASES);
export type DeleteHookPhase = z.infer<typeof deleteHookPhaseSchema>;
/** Every phase a hook may name. A sync report carries only sync phases, a deletion report only deletion ones. */
export const anyHookPhaseSchema = z.enum([...HOOK_PHASES, ...DELETE_HOOK_PHASES]);
export type AnyHookPhase = z.infer<typeof anyHookPhaseSchema>;

export const resourceResultSchema = objectRefSchema.extend({
  action: resourceActionSchema,
  message: z.string().default(''),
  /** Set for a hook: the phase it ran in. `applied` = it ran and succeeded, `failed` = it failed. */
  hookPhase: anyHookPhaseSchema.optional(),
});
export type ResourceResult = z.infer<typeof resourceResultSchema>;

const reportBase = z.object({
  /** Made by the agent (a UUID); the hub ignores a report id it has already stored. */
  id: z.string().min(1).max(100),
  targetId: z.string(),
  at: z.iso.datetime(),
});

export const syncReportSchema = reportBase.extend({
  type: z.literal('sync'),
  revision: z.string(),
  bundleDigest: z.string(),
  trigger: syncTriggerSchema,
  outcome: syncOutcomeSchema,
  startedAt: z.iso.datetime(),
  finishedAt: z.iso.datetime(),
  message: z.string().default(''),
  resources: z.array(resourceResultSchema).default([]),
  /** Trigger `manual` only: the operation (`Assignment.operations`) this run carried out. */
  operationId: z.string().min(1).max(100).optional(),
  /**
   * A dry run (a requested sync with `dryRun`): the resources say what a sync would do, and nothing
   * was changed; it never counts as the target's last sync.
   */
  dryRun: z.boolean().optional(),
  /** Trigger `rollback` only: the revision that failed and was replaced by this sync's revision. */
  rolledBackFrom: z
    .object({ revision: z.string(), bundleDigest: z.string(), reason: z.string().default('') })
    .optional(),
});

export const healthReportSchema = reportBase.extend({
  type: z.literal('health'),
  status: healthStatusSchema,
  message: z.string().default(''),
  resources: z
    .array(objectRefSchema.extend({ status: healthStatusSchema, message: z.string().default('') }))
    .default([]),
});

export const driftReportSchema = reportBase.extend({
  type: z.literal('drift'),
  state: z.enum(['detected', 'healed', 'contested', 'tolerated']),
  resource: objectRefSchema,
  paths: z.array(z.string()).default([]),
  /** The field manager that made the change, when managedFields tell. */
  manager: z.string().optional(),
  breakGlassId: z.string().optional(),
});

/**
 * Bounds of one comparison report, so that a target of thousands of changed objects can neither
 * fill the hub's database nor a person's terminal: the agent cuts each diff and the list to fit
 * (marking what it cut), and the hub refuses a report beyond them.
 */
export const COMPARISON_LIMITS = {
  /** UTF-8 bytes of one object's diff. */
  diffBytes: 16 * 1024,
  /** Objects listed (those out of sync; the count of all compared travels beside them). */
  objects: 500,
  /** UTF-8 bytes of every listed object's diff together. */
  totalDiffBytes: 256 * 1024,
} as const;

const utf8 = new TextEncoder();
const utf8Length = (text: string): number => utf8.encode(text).length;

/** One object out of sync with what Git wants: what a sync would do to it, and how. */
export const objectComparisonSchema = objectRefSchema.extend({
  apiVersion: z.string().min(1),
  /**
   * `create`: the cluster does not have it; `change`: a sync would change these fields; `delete`: the
   * target applied it and Git no longer declares it, so a prune would delete it (see `prune`).
   */
  action: z.enum(['create', 'change', 'delete']),
  /**
   * Only on `delete`: whether a sync would delete it now (prune on, no `Prune=false` on the object,
   * and the revision declares something or allows emptiness); false: it would be left in place.
   */
  prune: z.boolean().optional(),
  /** JSON pointers of the fields that differ (live indexes; '' for the whole object). */
  paths: z.array(z.string()).max(200).default([]),
  /** A unified diff, live against what a sync would make it, as `kubectl diff` prints; Secret values masked. */
  diff: z.string().refine((d) => utf8Length(d) <= COMPARISON_LIMITS.diffBytes, {
    message: `at most ${COMPARISON_LIMITS.diffBytes} bytes of diff per object; cut it and set truncated`,
  }),
  /** The diff was cut to the limit. */
  truncated: z.boolean().default(false),
});
export type ObjectComparison = z.infer<typeof objectComparisonSchema>;

/**
 * What the agent's drift check found for the whole target: every declared object compared with the
 * cluster, against this revision and bundle. Sent whenever its content changes, automated sync or
 * not, so that the hub can show OutOfSync and the diff before anyone syncs.
 */
export const comparisonReportSchema = reportBase
  .extend({
    type: z.literal('comparison'),
    revision: z.string(),
    bundleDigest: z.string(),
    inSync: z.boolean(),
    /** How many declared objects were compared. */
    compared: z.number().int().min(0),
    /** The objects out of sync, sorted by group, kind, namespace and name. */
    objects: z
      .array(objectComparisonSchema)
      .max(COMPARISON_LIMITS.objects, `at most ${COMPARISON_LIMITS.objects} objects per comparison`),
    /** More objects are out of sync than listed, or diffs were emptied to keep to the total. */
    truncated: z.boolean().default(false),
  })
  .superRefine((r, ctx) => {
    const total = r.objects.reduce((n, o) => n + utf8Length(o.diff), 0);
    if (total > COMPARISON_LIMITS.totalDiffBytes)
      ctx.addIssue({
        code: 'custom',
        path: ['objects'],
        message: `at most ${COMPARISON_LIMITS.totalDiffBytes} bytes of diff in all; this one has ${total}`,
      });
  });

/**
 * What became of one object when its target was deleted: `deleted`, `kept` (Delete=false,
 * helm.sh/resource-policy: keep, or no longer this target's), `failed`; for a hook, `applied` = it ran
 * and succeeded.
 */
export const deletionResultSchema = objectRefSchema.extend({
  action: z.enum(['deleted', 'kept', 'failed', 'applied']),
  message: z.string().default(''),
  hookPhase: deleteHookPhaseSchema.optional(),
});
export type DeletionResult = z.infer<typeof deletionResultSchema>;

/**
 * The agent carried out (or could not carry out) a tombstone. Succeeded: every object the target
 * tracked is gone or kept on purpose, and the hooks ran; the hub then deletes the target. Failed: the
 * message says where it stopped; the target stays, and the agent tries again.
 */
export const deletionReportSchema = reportBase.extend({
  type: z.literal('deletion'),
  deletionId: z.string().min(1).max(100),
  outcome: z.enum(['Succeeded', 'Failed']),
  startedAt: z.iso.datetime(),
  finishedAt: z.iso.datetime(),
  message: z.string().default(''),
  resources: z.array(deletionResultSchema).default([]),
});
export type DeletionReport = z.infer<typeof deletionReportSchema>;

export const reportSchema = z.discriminatedUnion('type', [
  syncReportSchema,
  healthReportSchema,
  driftReportSchema,
  comparisonReportSchema,
  deletionReportSchema,
]);
export type Report = z.infer<typeof reportSchema>;
export type SyncReport = z.infer<typeof syncReportSchema>;
export type HealthReport = z.infer<typeof healthReportSchema>;
export type DriftReport = z.infer<typeof driftReportSchema>;
export type ComparisonReport = z.infer<typeof comparisonReportSchema>;

export const reportBatchSchema = z.object({ reports: z.array(reportSchema).max(1000) });
export type ReportBatch = z.infer<typeof reportBatchSchema>;

export const reportBatchResponseSchema = z.object({
  accepted: z.number().int(),
  duplicates: z.number().int(),
  /**
   * Reports observed before the hub's replay horizon (RETENTION_REPORT_ID_DAYS): too old to tell
   * from a replay whose id retention deleted, so dropped unread. Absent when none (and from older hubs).
   */
  expired: z.number().int().optional(),
  /**
   * Reports the hub refused and did not store, with why (text it cannot store: a NUL character or
   * a lone surrogate); the rest of the batch is stored. Sending them again is refused again. Absent
   * from older hubs.
   */
  refused: z
    .array(z.object({ index: z.number().int(), id: z.string(), code: z.string(), message: z.string() }))
    .optional(),
});
export type ReportBatchResponse = z.infer<typeof reportBatchResponseSchema>;

// The agent API's named schemas in the hub's OpenAPI document (see api-schemas.ts).
registerRequestSchema.register(apiInputs, { id: 'AgentRegisterRequest' });
registerResponseSchema.register(apiAnswers, { id: 'AgentRegisterResponse' });
clusterCapabilitiesSchema.register(apiInputs, { id: 'ClusterCapabilities' });
capabilitiesResponseSchema.register(apiAnswers, { id: 'CapabilitiesResponse' });
assignmentsResponseSchema.register(apiAnswers, { id: 'AssignmentsResponse' });
bundleSchema.register(apiAnswers, { id: 'Bundle' });
bundleBatchRequestSchema.register(apiInputs, { id: 'BundleBatchRequest' });
bundleBatchResponseSchema.register(apiAnswers, { id: 'BundleBatchResponse' });
reportBatchSchema.register(apiInputs, { id: 'ReportBatch' });
reportBatchResponseSchema.register(apiAnswers, { id: 'ReportBatchResponse' });
