import {
  type AuditActor,
  zodDetails,
  type DeliveryStatus,
  type NotificationDeliveryView,
  type NotificationDestinationView,
  type NotificationPolicyView,
} from '@flotilla/contract';
import { Inject, Injectable } from '@nestjs/common';
import { notificationPolicyObjectSchema, type NotificationPolicySpec } from '@flotilla/fleet-config';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import { toJson } from '../common/json.js';
import { AuditLog } from '../audit/audit.service.js';
import { CredentialCipher } from '../sources/git/credential-cipher.js';
import type { NotificationDelivery, NotificationDestination, Prisma } from '../generated/prisma/client.js';
import {
  splitSecret,
  type DestinationInput,
  type DestinationType,
  type OpenDestination,
} from './destinations/destination-types.js';
import { COMMIT_STATE_OF } from './destinations/commit-status.js';
import { pageArgs, pageOf, type PageQuery } from '../common/name-page.js';

export interface DeliveryQuery {
  status?: DeliveryStatus;
  policy?: string;
  destination?: string;
  trigger?: string;
  limit: number;
}

/** Bound as additional data, so a sealed secret copied onto another destination does not open. */
const secretContext = (name: string) => `notification-destination:${name}`;

/**
 * Destinations (sealed secrets, created through the API only), policies (through the API or from a
 * fleet repository) and the delivery rows people read to see what was sent, to whom, and what failed.
 */
@Injectable()
export class NotificationsService {
  private readonly cipher: CredentialCipher;

  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    @Inject(HUB_CONFIG) config: HubConfig,
  ) {
    this.cipher = new CredentialCipher(config.secrets.key, config.secrets.previousKeys);
  }

  async putDestination(input: DestinationInput, actor: AuditActor) {
    if (!this.cipher.canSeal) {
      throw new HubError(
        503,
        'secrets-key-missing',
        'FLOTILLA_SECRETS_KEY is not set on the hub: notification destinations hold secrets and cannot be stored',
        'type',
      );
    }
    const { config, secret } = splitSecret(input);
    const data = {
      type: input.type,
      config: toJson(config),
      sealedSecret: this.cipher.seal(secret, secretContext(input.name)),
    };
    return this.db.prisma.$transaction(async (tx) => {
      const existing = await tx.notificationDestination.findUnique({ where: { name: input.name } });
      const row = await tx.notificationDestination.upsert({
        where: { name: input.name },
        create: { name: input.name, createdBy: actor, ...data },
        update: data,
      });
      await this.audit.record(
        {
          actor,
          action: existing ? 'notification-destination.updated' : 'notification-destination.created',
          scope: `notification-destination:${input.name}`,
          details: { type: input.type, config },
        },
        tx,
      );
      return { created: !existing, destination: destinationView(row) };
    });
  }

  async listDestinations() {
    const rows = await this.db.prisma.notificationDestination.findMany({ orderBy: { name: 'asc' } });
    return rows.map(destinationView);
  }

  async destinationsPage(q: PageQuery) {
    const { where, take } = pageArgs(q);
    const rows = await this.db.prisma.notificationDestination.findMany({
      where,
      take,
      orderBy: { name: 'asc' },
    });
    const page = pageOf(rows, q);
    return { items: page.rows.map(destinationView), nextCursor: page.nextCursor };
  }

  async deleteDestination(name: string, actor: AuditActor): Promise<void> {
    const usedBy = (await this.db.prisma.notificationPolicy.findMany()).filter((p) =>
      specOf(p.spec).destinations.includes(name),
    );
    if (usedBy.length > 0) {
      throw new HubError(
        409,
        'destination-in-use',
        `destination "${name}" is used by policy ${usedBy.map((p) => `"${p.name}"`).join(', ')}`,
      );
    }
    await this.db.prisma.$transaction(async (tx) => {
      const { count } = await tx.notificationDestination.deleteMany({ where: { name } });
      if (count === 0) throw HubError.notFound('notification destination', name);
      await this.audit.record(
        { actor, action: 'notification-destination.deleted', scope: `notification-destination:${name}` },
        tx,
      );
    });
  }

  /** The destination with its secret opened, for one send. */
  open(row: NotificationDestination): OpenDestination {
    return {
      id: row.id,
      name: row.name,
      type: row.type as DestinationType,
      config: (row.config ?? {}) as Record<string, unknown>,
      secret: row.sealedSecret ? this.cipher.open(row.sealedSecret, secretContext(row.name)) : null,
    };
  }

  /**
   * A NotificationPolicy document (the fleet repository's form), checked in full, templates
   * included, and its destinations must exist: a bad one is refused and changes nothing.
   */
  async putPolicy(document: unknown, actor: AuditActor) {
    const parsed = notificationPolicyObjectSchema.safeParse(document);
    if (!parsed.success) {
      const details = zodDetails(parsed.error);
      const first = details[0];
      throw new HubError(
        400,
        'invalid-notification-policy',
        `invalid NotificationPolicy: ${first ? `${first.path}: ${first.message}` : 'unreadable'}`,
        first?.path,
        details,
      );
    }
    const { metadata, spec } = parsed.data;
    return this.db.prisma.$transaction(async (tx) => {
      await checkPolicyDestinations(tx, spec);
      const existing = await tx.notificationPolicy.findUnique({ where: { name: metadata.name } });
      if (existing?.managedBy === 'git') {
        throw new HubError(
          409,
          'managed-by-git',
          `notification policy "${metadata.name}" comes from a fleet repository: change it there`,
        );
      }
      const row = await tx.notificationPolicy.upsert({
        where: { name: metadata.name },
        create: { name: metadata.name, spec: toJson(spec) },
        update: { spec: toJson(spec) },
      });
      await this.audit.record(
        {
          actor,
          action: existing ? 'notification-policy.updated' : 'notification-policy.created',
          scope: `notification-policy:${metadata.name}`,
          details: { spec },
        },
        tx,
      );
      return { created: !existing, policy: policyView(row) };
    });
  }

  async listPolicies() {
    const rows = await this.db.prisma.notificationPolicy.findMany({ orderBy: { name: 'asc' } });
    return rows.map(policyView);
  }

  async policiesPage(q: PageQuery) {
    const { where, take } = pageArgs(q);
    const rows = await this.db.prisma.notificationPolicy.findMany({ where, take, orderBy: { name: 'asc' } });
    const page = pageOf(rows, q);
    return { items: page.rows.map(policyView), nextCursor: page.nextCursor };
  }

  async getPolicy(name: string) {
    const row = await this.db.prisma.notificationPolicy.findUnique({ where: { name } });
    if (!row) throw HubError.notFound('notification policy', name);
    return policyView(row);
  }

  async deletePolicy(name: string, actor: AuditActor): Promise<void> {
    await this.db.prisma.$transaction(async (tx) => {
      const row = await tx.notificationPolicy.findUnique({ where: { name } });
      if (!row) throw HubError.notFound('notification policy', name);
      if (row.managedBy === 'git') {
        throw new HubError(
          409,
          'managed-by-git',
          `notification policy "${name}" comes from a fleet repository: remove it there`,
        );
      }
      await tx.notificationPolicy.delete({ where: { name } });
      await this.audit.record(
        { actor, action: 'notification-policy.deleted', scope: `notification-policy:${name}` },
        tx,
      );
    });
  }

  /** Newest first: what was (or is to be) sent, to whom, and what failed. */
  async listDeliveries(q: DeliveryQuery) {
    const destination = q.destination
      ? await this.db.prisma.notificationDestination.findUnique({ where: { name: q.destination } })
      : undefined;
    if (q.destination && !destination) return [];
    const rows = await this.db.prisma.notificationDelivery.findMany({
      where: {
        ...(q.status && { status: q.status }),
        ...(q.policy && { policyName: q.policy }),
        ...(q.trigger && { trigger: q.trigger }),
        ...(destination && { destinationId: destination.id }),
      },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: q.limit,
    });
    const names = new Map(
      (
        await this.db.prisma.notificationDestination.findMany({
          where: { id: { in: [...new Set(rows.map((r) => r.destinationId))] } },
          select: { id: true, name: true },
        })
      ).map((d) => [d.id, d.name]),
    );
    return rows.map((r) => deliveryView(r, names.get(r.destinationId) ?? null));
  }
}

export function specOf(spec: unknown): NotificationPolicySpec {
  return spec as NotificationPolicySpec;
}

function destinationView(r: NotificationDestination): NotificationDestinationView {
  return {
    name: r.name,
    type: r.type,
    config: (r.config ?? {}) as Record<string, unknown>,
    hasSecret: r.sealedSecret !== null,
    createdBy: r.createdBy,
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
  };
}

function policyView(r: {
  name: string;
  spec: unknown;
  managedBy: string;
  sourceCommit: string | null;
}): NotificationPolicyView {
  return {
    apiVersion: 'flotilla.dev/v1alpha1',
    kind: 'NotificationPolicy',
    metadata: { name: r.name },
    spec: specOf(r.spec),
    managedBy: r.managedBy,
    sourceCommit: r.sourceCommit,
  };
}

function deliveryView(r: NotificationDelivery, destination: string | null): NotificationDeliveryView {
  return {
    id: r.id,
    dedupeKey: r.dedupeKey,
    policy: r.policyName,
    trigger: r.trigger,
    destination,
    status: r.status as DeliveryStatus,
    eventCount: r.eventCount,
    attempts: r.attempts,
    lastError: r.lastError,
    sendAfter: r.sendAfter.toISOString(),
    sentAt: r.sentAt?.toISOString() ?? null,
    createdAt: r.createdAt.toISOString(),
    events: Array.isArray(r.events) ? r.events : [],
  };
}

/**
 * A policy's destinations must exist, and one that sets commit statuses takes only the triggers that
 * set one. The API and a fleet repository commit refuse the same way (the commit whole).
 */
export async function checkPolicyDestinations(
  tx: Prisma.TransactionClient,
  spec: NotificationPolicySpec,
): Promise<void> {
  const found = await tx.notificationDestination.findMany({
    where: { name: { in: spec.destinations } },
    select: { name: true, type: true },
  });
  const known = new Set(found.map((d) => d.name));
  const missing = spec.destinations.findIndex((d) => !known.has(d));
  if (missing >= 0) {
    throw new HubError(
      422,
      'unknown-destination',
      `notification destination "${spec.destinations[missing]}" does not exist (create it with POST /api/v1/notifications/destinations)`,
      `spec.destinations[${missing}]`,
    );
  }
  if (found.some((d) => d.type === 'commit-status')) {
    const i = spec.triggers.findIndex((t) => COMMIT_STATE_OF[t] === undefined);
    if (i >= 0) {
      throw new HubError(
        422,
        'trigger-without-commit-status',
        `trigger ${spec.triggers[i]} sets no commit status; a policy with a commit-status destination may name ${Object.keys(COMMIT_STATE_OF).join(', ')}`,
        `spec.triggers[${i}]`,
      );
    }
  }
}
