import { TemplateEngine, TemplateError } from '@flotilla/gotemplate';
import { z } from 'zod';
import { labelSelectorSchema, metadataSchema, objectNameSchema } from '@flotilla/labels';
import { FLOTILLA_API_VERSION, goDurationSchema } from './common.js';

/**
 * What a notification can be about: Argo CD Notifications' catalogue (sync, health, drift, deployed)
 * plus what only a fleet manager knows (rollout steps, automatic rollback, the deletion guard,
 * break-glass, offline agents, refusals). The hub maps its audit events onto these names.
 */
export const NOTIFICATION_TRIGGERS = [
  'sync-running',
  'sync-succeeded',
  'sync-failed',
  'health-degraded',
  'drift-detected',
  'healed',
  'contested',
  'deployed',
  'rollout-started',
  'rollout-step-started',
  'rollout-step-completed',
  'rollout-halted',
  'rollout-completed',
  'automatic-rollback',
  'deletion-guard-held',
  'break-glass-opened',
  'break-glass-closed',
  'break-glass-expired',
  'window-held',
  'agent-offline',
  'policy-refused',
] as const;
export type NotificationTrigger = (typeof NOTIFICATION_TRIGGERS)[number];

const triggerSchema = z.enum(NOTIFICATION_TRIGGERS, {
  error: (issue) =>
    `${JSON.stringify(issue.input)} is not a notification trigger (expected one of ${NOTIFICATION_TRIGGERS.join(', ')})`,
});

/**
 * What a template sees: a sample with every field the hub fills in, so a template that names a field
 * the hub does not have (or calls an unknown function) is refused when the policy is submitted, not
 * when the first message should go out.
 */
export const NOTIFICATION_TEMPLATE_SAMPLE = {
  id: '00000000-0000-4000-8000-000000000000',
  policy: 'sample',
  trigger: 'sync-failed',
  count: 1,
  appSet: 'web',
  revision: '0123456789abcdef0123456789abcdef01234567',
  title: 'sync-failed: web',
  text: 'web-eu-1: sync failed at 0123456789ab: apply failed',
  events: [
    {
      at: '2026-01-01T00:00:00.000Z',
      action: 'sync.failed',
      actor: 'agent:eu-1',
      scope: 'target:web-eu-1',
      target: 'web-eu-1',
      cluster: 'eu-1',
      appSet: 'web',
      project: 'default',
      revision: '0123456789abcdef0123456789abcdef01234567',
      message: 'apply failed',
      details: {},
    },
  ],
} as const;

// Go's builtins and Sprig, the same engine the hub renders messages with (notifications/).
const engine = new TemplateEngine();

/** A Go template (with Sprig), checked by rendering the sample. */
const templateStringSchema = z
  .string()
  .max(8192, 'a template must be at most 8192 characters')
  .superRefine((text, ctx) => {
    const problem = templateProblem(text);
    if (problem) ctx.addIssue({ code: 'custom', message: problem, params: { code: 'invalid-template' } });
  });

/** Why `text` does not render with the sample event (missing keys are errors), or null when it does. */
export function templateProblem(text: string): string | null {
  let template;
  try {
    template = engine.parse(text);
  } catch (err) {
    if (err instanceof TemplateError) return `failed to parse template ${text}: ${err.message}`;
    throw err;
  }
  try {
    template.execute(structuredClone(NOTIFICATION_TEMPLATE_SAMPLE), { missingKey: 'error' });
    return null;
  } catch (err) {
    if (err instanceof TemplateError) return `failed to execute go template ${text}: ${err.message}`;
    throw err;
  }
}

export const notificationPolicySpecSchema = z.strictObject({
  triggers: z.array(triggerSchema).min(1, 'name at least one trigger'),
  /** Appset names or globs; none = every appset (and events that belong to none). */
  appSets: z.array(z.string().min(1)).default([]),
  projects: z.array(objectNameSchema).default([]),
  /** Over the labels of the event's cluster; events without a cluster (a rollout) are not filtered. */
  clusterSelector: labelSelectorSchema.optional(),
  /** NotificationDestination names (made through the API, since they hold secrets). */
  destinations: z.array(objectNameSchema).min(1, 'name at least one destination'),
  /** Events of one trigger and appset within this window become one message. */
  digestWindow: goDurationSchema.default('10s'),
  template: z
    .strictObject({ title: templateStringSchema.optional(), body: templateStringSchema.optional() })
    .optional(),
});
export type NotificationPolicySpec = z.output<typeof notificationPolicySpecSchema>;

export const notificationPolicyObjectSchema = z.strictObject({
  apiVersion: z.literal(FLOTILLA_API_VERSION),
  kind: z.literal('NotificationPolicy'),
  metadata: metadataSchema,
  spec: notificationPolicySpecSchema,
});

export type NotificationPolicyObject = z.infer<typeof notificationPolicyObjectSchema>;
