import { z } from 'zod';
import { apiAnswers } from './api-schemas.js';
import type { peopleRoleSchema } from './api-token.js';
import type { HealthStatus, SyncStatus } from './status.js';
import type { TargetReason } from './target-reason.js';

/**
 * The fleet view (`GET /api/v1/fleet`): clusters × ApplicationSets, filtered and paged on the hub, so
 * a browser (or the CLI) never loads the whole fleet to show one page of it.
 */

/** What `status=` accepts: a sync status, a health status, or `Offline` (the cluster's agent). */
export const FLEET_STATUS_FILTERS = [
  'Synced',
  'OutOfSync',
  'Unknown',
  'Healthy',
  'Progressing',
  'Degraded',
  'Missing',
  'Suspended',
  'Offline',
] as const;
export type FleetStatusFilter = (typeof FLEET_STATUS_FILTERS)[number];

/** One target: a cell of the matrix. */
export interface FleetCellView {
  target: string;
  appSet: string;
  project: string;
  syncStatus: SyncStatus;
  health: HealthStatus;
  /** The commit the target should run, and the one its agent last synced (null: never). */
  desiredRevision: string;
  lastSyncedRevision: string | null;
  /** The one current reason (null: Synced and Healthy at the revision Git wants). */
  reason: TargetReason | null;
  automated: boolean;
  /** Its cluster's agent is offline: syncStatus and health are as last reported, not current. */
  stale: boolean;
}

/** One cluster: a row of the matrix, with its agent's liveness. */
export interface FleetRowView {
  cluster: string;
  labels: Record<string, string>;
  online: boolean;
  lastSeenAt: string | null;
  cells: FleetCellView[];
}

/** Counts over every match of the filters, not only the page shown. */
export interface FleetCountsView {
  clusters: number;
  offlineClusters: number;
  targets: number;
  sync: Record<SyncStatus, number>;
  health: Record<HealthStatus, number>;
}

export interface FleetView {
  /** The ApplicationSets among the matches: the matrix's columns, by name. */
  appSets: string[];
  rows: FleetRowView[];
  counts: FleetCountsView;
  /** Pass back as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
  at: string;
}

/** `GET /api/v1/session`: who the caller is, so a client shows only the controls the role allows. */
export interface SessionView {
  subject: string;
  role: z.infer<typeof peopleRoleSchema>;
  /** True when the hub runs without people authentication (a development hub). */
  open: boolean;
}

/** The `fleet` event of `GET /api/v1/events`: what changed since the last event. */
export interface FleetEventView {
  targets: string[];
  clusters: string[];
  /** A sync window or break-glass was created, changed, closed or deleted: any target's reason may have changed. */
  policies: boolean;
  /**
   * ApplicationSets whose row or rollout changed (an expansion held or confirmed, a rollout's step,
   * pause or promote): these change no target row until a release, so they are named here.
   */
  appSets: string[];
  at: string;
}

/**
 * `GET /api/v1/auth/oidc` (public): what the console needs to sign a person in at the hub's OIDC
 * issuer with the authorization code flow and PKCE. 404 `oidc-sign-in-off` when the hub has none.
 */
export const oidcSignInViewSchema = z
  .object({ issuer: z.string(), clientId: z.string(), authorizationEndpoint: z.string(), scopes: z.string() })
  .register(apiAnswers, { id: 'OidcSignInView' });
export type OidcSignInView = z.infer<typeof oidcSignInViewSchema>;

/**
 * `POST /api/v1/auth/oidc/token` (public) answers the console's `{code, codeVerifier, redirectUri}`
 * with the issuer's token the hub accepts as a bearer, and who it names.
 */
export const oidcTokenViewSchema = z
  .object({
    token: z.string(),
    subject: z.string(),
    role: z.enum(['viewer', 'operator', 'admin']),
    expiresAt: z.string().nullable().describe('when the token stops being accepted (its `exp`), if it says'),
  })
  .register(apiAnswers, { id: 'OidcTokenView' });
export type OidcTokenView = z.infer<typeof oidcTokenViewSchema>;
