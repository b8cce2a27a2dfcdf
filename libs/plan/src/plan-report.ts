import { apiAnswers } from '@flotilla/contract';
import { z } from 'zod';

/**
 * The JSON a plan prints (`flotilla plan -o json`): a public interface for CI steps and bots, like
 * the other offline commands' output. Extend it with new fields; never rename or remove one.
 * docs/schemas/plan-report.schema.json is generated from this schema.
 */

const change = z.enum(['added', 'removed', 'changed']);

const guardSchema = z
  .object({
    wouldHold: z.boolean().meta({ description: 'the hub would hold this change until a person confirms it' }),
    deletePercent: z.number().meta({ description: 'share of the judged count the change deletes (0–100)' }),
    limit: z.number().meta({ description: 'the largest share that goes through without confirmation' }),
    current: z.number().int(),
    deleting: z.number().int(),
    after: z.number().int(),
  })
  .meta({ description: "the hub's deletion guard, judged with no recorded baseline (the current count)" });

const objectChangeSchema = z.object({
  apiVersion: z.string(),
  kind: z.string(),
  namespace: z.string().nullable(),
  name: z.string(),
  change,
  diff: z
    .string()
    .meta({ description: 'unified diff (base/… → head/…), as kubectl diff prints it; Secret values masked' }),
  truncated: z.boolean(),
});

const windowsSchema = z.object({
  canSync: z.boolean().meta({ description: 'an automatic sync may run at `at`' }),
  matching: z.array(z.string()).meta({ description: 'names of the SyncWindows that apply to the target' }),
  active: z.array(z.string()),
  heldUntil: z.string().nullable().meta({
    description: 'when held: when syncs are next allowed (null when not within a year, or not held)',
  }),
});

const targetPlanSchema = z.object({
  name: z.string(),
  cluster: z.string().nullable(),
  change,
  step: z
    .object({ index: z.number().int(), name: z.string() })
    .nullable()
    .meta({ description: 'the rollout step the cluster falls in; null when the appset has no rollout' }),
  windows: windowsSchema,
  digest: z.object({ base: z.string().nullable(), head: z.string().nullable() }),
  objects: z.array(objectChangeSchema),
});

const appSetPlanSchema = z.object({
  name: z.string(),
  change: z.enum(['added', 'removed', 'changed', 'unchanged']),
  project: z.string(),
  rollout: z
    .object({ strategy: z.string().nullable(), steps: z.array(z.string()) })
    .nullable()
    .meta({
      description: 'the steps of the rollout that moves the change (strategy: the RolloutStrategy named)',
    }),
  targets: z.array(targetPlanSchema).meta({ description: 'targets added, removed or changed, by name' }),
  unchangedTargets: z.number().int(),
  deletionGuard: guardSchema,
});

const fleetObjectChangeSchema = z.object({
  kind: z.string(),
  name: z.string(),
  change,
  file: z.string(),
  diff: z.string(),
});

const violationSchema = z.object({
  appSet: z.string(),
  target: z.string(),
  cluster: z.string().nullable(),
  object: z.object({
    apiVersion: z.string(),
    kind: z.string(),
    namespace: z.string().nullable(),
    name: z.string(),
  }),
  policy: z.string(),
  binding: z.string(),
  action: z.enum(['Deny', 'Warn', 'Audit']),
  message: z.string(),
});

const projectViolationSchema = z.object({
  appSet: z.string(),
  target: z
    .string()
    .nullable()
    .meta({ description: 'null for a repository the appset document itself names' }),
  cluster: z.string().nullable(),
  code: z.enum(['repo-not-permitted', 'destination-not-permitted', 'kind-not-permitted']),
  message: z.string(),
});

export const planReportSchema = z
  .object({
    base: z.object({ revision: z.string().nullable() }),
    head: z.object({ revision: z.string().nullable() }),
    at: z.string().meta({ description: 'the time windows were evaluated at (RFC 3339)' }),
    changed: z.boolean().meta({ description: 'anything changes: a target, an object or a fleet object' }),
    summary: z.object({
      appSets: z.object({ added: z.number().int(), removed: z.number().int(), changed: z.number().int() }),
      targets: z.object({
        added: z.number().int(),
        removed: z.number().int(),
        changed: z.number().int(),
        unchanged: z.number().int(),
      }),
      objectsChanged: z.number().int(),
      fleetObjectsChanged: z.number().int(),
      guardHolds: z
        .number()
        .int()
        .meta({ description: 'appsets (and the fleet source) the guard would hold' }),
      heldByWindows: z
        .number()
        .int()
        .meta({ description: 'added or changed targets a window holds at `at`' }),
      policyDenials: z.number().int(),
      projectViolations: z.number().int(),
    }),
    fleet: z.object({
      objects: z
        .array(fleetObjectChangeSchema)
        .meta({ description: 'ApplicationSets, SyncWindows, Projects, RolloutStrategies, ClusterGroups' }),
      deletionGuard: z.object({ objects: guardSchema, targets: guardSchema }).meta({
        description: "the fleet source's guard: fleet objects deleted, and the targets of deleted appsets",
      }),
    }),
    appSets: z.array(appSetPlanSchema),
    projects: z.object({ violations: z.array(projectViolationSchema) }).meta({
      description:
        "what the head's Projects forbid of its targets: the hub refuses such an appset's expansion",
    }),
    policies: z.object({
      evaluated: z
        .number()
        .int()
        .meta({ description: 'objects of the head revision checked against its admission policies' }),
      allowed: z.boolean(),
      violations: z.array(violationSchema),
    }),
  })
  .meta({ title: 'flotilla plan report', description: 'What merging head over base would do to the fleet' });

// The hub's POST /api/v1/plan answers this very shape (named in its OpenAPI document).
planReportSchema.register(apiAnswers, { id: 'PlanReport' });

export type PlanReport = z.infer<typeof planReportSchema>;
export type AppSetPlan = z.infer<typeof appSetPlanSchema>;
export type TargetPlan = z.infer<typeof targetPlanSchema>;
export type ObjectChange = z.infer<typeof objectChangeSchema>;
export type FleetObjectChange = z.infer<typeof fleetObjectChangeSchema>;
export type GuardReport = z.infer<typeof guardSchema>;
export type PolicyViolation = z.infer<typeof violationSchema>;
export type ProjectViolationReport = z.infer<typeof projectViolationSchema>;
export type Change = z.infer<typeof change>;

/**
 * The report's JSON Schema, as docs/schemas/plan-report.schema.json holds it. Objects admit
 * properties beyond those listed: the report grows new fields, and a consumer's validation must not
 * break when it does.
 */
export function planReportJsonSchema(): Record<string, unknown> {
  return {
    $id: 'https://flotilla.dev/schemas/v1alpha1/plan-report.schema.json',
    ...(open(z.toJSONSchema(planReportSchema, { io: 'output' })) as Record<string, unknown>),
  };
}

function open(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(open);
  if (typeof node !== 'object' || node === null) return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([k, v]) => !(k === 'additionalProperties' && v === false))
      .map(([k, v]) => [k, open(v)]),
  );
}
