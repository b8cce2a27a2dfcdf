import type { AuditActor } from '@flotilla/contract';
import type { Request } from 'express';
import type { PeopleRole } from '../config/hub-config.js';

/** Who is calling the people API, as PeopleAuthGuard established it. */
export interface Principal {
  /** How they proved it: the break-the-ice admin token, an API token, an OIDC JWT, or nothing (open hub). */
  kind: 'admin-token' | 'api-token' | 'oidc' | 'open';
  role: PeopleRole;
  /** What the audit log records as the actor, e.g. `token:ci-deployer` or `user:alice@example.com` (an OIDC subject). */
  actor: AuditActor;
  /** The key requests are counted under for the rate limit; null = not limited. */
  rateKey: string | null;
}

export type PeopleRequest = Request & { principal?: Principal };
