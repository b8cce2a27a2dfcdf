import { z } from 'zod';
import { FLEET_KINDS, type FleetKind } from './fleet-object.js';
import { applicationSetObjectSchema } from '@flotilla/generators';
import { clusterGroupObjectSchema } from './kinds/cluster-group.js';
import { notificationPolicyObjectSchema } from './kinds/notification-policy.js';
import { projectObjectSchema } from './kinds/project.js';
import { rolloutStrategyObjectSchema } from './kinds/rollout-strategy.js';
import { sourceVerificationObjectSchema } from './kinds/source-verification.js';
import { syncWindowObjectSchema } from './kinds/sync-window.js';

const SCHEMAS: Record<FleetKind, z.ZodType> = {
  ApplicationSet: applicationSetObjectSchema,
  ClusterGroup: clusterGroupObjectSchema,
  Project: projectObjectSchema,
  RolloutStrategy: rolloutStrategyObjectSchema,
  SyncWindow: syncWindowObjectSchema,
  NotificationPolicy: notificationPolicyObjectSchema,
  SourceVerification: sourceVerificationObjectSchema,
};

const BASE_URL = 'https://flotilla.dev/schemas/v1alpha1';

/** `RolloutStrategy` → `rollout-strategy.schema.json`. */
export function schemaFileName(kind: FleetKind): string {
  return `${kind.replace(/([a-z])([A-Z])/g, '$1-$2').toLowerCase()}.schema.json`;
}

/**
 * The published JSON Schema of each kind (file name → schema), generated from the zod schemas that
 * validate them, for editors and other tools. They describe what people write (defaults optional);
 * checks a JSON Schema cannot express (cron, time zones, references) are `flotilla validate`'s.
 */
export function fleetJsonSchemas(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kind of FLEET_KINDS) {
    const file = schemaFileName(kind);
    const generated = z.toJSONSchema(SCHEMAS[kind], { io: 'input', unrepresentable: 'any' });
    out[file] = {
      $id: `${BASE_URL}/${file}`,
      title: kind,
      ...generated,
    };
  }
  return out;
}

/** The committed form of a schema file: two-space JSON with a final newline (what prettier keeps). */
export function serializeSchema(schema: unknown): string {
  return `${JSON.stringify(schema, null, 2)}\n`;
}
