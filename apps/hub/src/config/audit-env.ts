// How the audit log is written: how many hash chains (lanes) writers spread over.
import { z } from 'zod';

/** A lane is a smallint in the database; far fewer than that ever help (see AuditLog). */
export const MAX_AUDIT_CHAIN_LANES = 256;

export const auditEnv = z.object({
  FLOTILLA_AUDIT_CHAIN_LANES: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_AUDIT_CHAIN_LANES)
    .default(8)
    .describe(
      'Audit hash chains written side by side, each with its own lock: up to this many transactions record audit at once across all replicas (1 = one chain, every writer in turn). Safe to change at any time: verification walks every lane that has events.',
    ),
});

export interface AuditConfig {
  audit: { chainLanes: number };
}

export function auditConfig(e: z.output<typeof auditEnv>): AuditConfig {
  return { audit: { chainLanes: e.FLOTILLA_AUDIT_CHAIN_LANES } };
}
