import type { Page } from '@flotilla/contract';
import { pageArgs, pageOf, type PageQuery } from '../common/name-page.js';
import { Injectable } from '@nestjs/common';
import type { ApiTokenView, CreateApiToken, CreatedApiToken } from '@flotilla/contract';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import { hashSecret, newSecret } from '../common/secrets.js';
import { AuditLog } from '../audit/audit.service.js';
import type { ApiToken } from '../generated/prisma/client.js';
import type { PeopleRole } from '../config/hub-config.js';
import { isPeopleRole } from '../auth/role-policy.js';

/** lastUsedAt is a hint for "is this token still in use?", not a log: one write a minute is enough. */
const LAST_USED_RESOLUTION_MS = 60_000;

/** People's API tokens: created by an admin, shown once, stored as a hash, listable and revocable. */
@Injectable()
export class ApiTokensService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
  ) {}

  async create(input: CreateApiToken, actor: string): Promise<CreatedApiToken> {
    const existing = await this.db.prisma.apiToken.findUnique({ where: { name: input.name } });
    if (existing) {
      throw new HubError(
        409,
        'already-exists',
        `an API token named "${input.name}" already exists (names stay taken after revocation); choose another name`,
        'name',
      );
    }
    const secret = newSecret('flp');
    const expiresAt = input.expiresInDays ? new Date(Date.now() + input.expiresInDays * 86_400_000) : null;
    const token = await this.db.prisma.$transaction(async (tx) => {
      const t = await tx.apiToken.create({
        data: {
          name: input.name,
          tokenHash: hashSecret(secret),
          role: input.role,
          expiresAt,
          createdBy: actor,
        },
      });
      await this.audit.record(
        {
          actor,
          action: 'token.created',
          scope: `token:${t.name}`,
          details: { role: t.role, expiresAt: expiresAt?.toISOString() ?? null },
        },
        tx,
      );
      return t;
    });
    return { token: view(token), secret };
  }

  async list(): Promise<ApiTokenView[]> {
    const tokens = await this.db.prisma.apiToken.findMany({ orderBy: { name: 'asc' } });
    return tokens.map(view);
  }

  /** One page of tokens by name (see common/name-page.ts). */
  async page(q: PageQuery): Promise<Page<ApiTokenView>> {
    const { where, take } = pageArgs(q);
    const page = pageOf(await this.db.prisma.apiToken.findMany({ where, take, orderBy: { name: 'asc' } }), q);
    return { items: page.rows.map(view), nextCursor: page.nextCursor };
  }

  /** Revoked at once: the next request with it is refused. Revoking twice changes nothing. */
  async revoke(name: string, actor: string): Promise<ApiTokenView> {
    const token = await this.db.prisma.apiToken.findUnique({ where: { name } });
    if (!token) throw HubError.notFound('API token', name);
    if (token.revokedAt) return view(token);
    const revoked = await this.db.prisma.$transaction(async (tx) => {
      const t = await tx.apiToken.update({ where: { id: token.id }, data: { revokedAt: new Date() } });
      await this.audit.record({ actor, action: 'token.revoked', scope: `token:${name}` }, tx);
      return t;
    });
    return view(revoked);
  }

  /** The token's name and role, or a 401 saying why it is not accepted. */
  async authenticate(secret: string): Promise<{ name: string; role: PeopleRole }> {
    const token = await this.db.prisma.apiToken.findUnique({ where: { tokenHash: hashSecret(secret) } });
    if (!token) {
      throw new HubError(
        401,
        'unauthorized',
        'unknown API token; ask an admin for one (flotilla tokens create)',
      );
    }
    if (token.revokedAt) {
      throw new HubError(
        401,
        'token-revoked',
        `API token "${token.name}" was revoked at ${token.revokedAt.toISOString()}`,
      );
    }
    const now = Date.now();
    if (token.expiresAt && token.expiresAt.getTime() <= now) {
      throw new HubError(
        401,
        'token-expired',
        `API token "${token.name}" expired at ${token.expiresAt.toISOString()}`,
      );
    }
    if (!isPeopleRole(token.role)) {
      throw new HubError(401, 'unauthorized', `API token "${token.name}" has no valid role`);
    }
    if (!token.lastUsedAt || now - token.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
      await this.db.prisma.apiToken.update({ where: { id: token.id }, data: { lastUsedAt: new Date(now) } });
    }
    return { name: token.name, role: token.role };
  }
}

function view(t: ApiToken): ApiTokenView {
  return {
    name: t.name,
    role: isPeopleRole(t.role) ? t.role : 'viewer',
    createdBy: t.createdBy,
    createdAt: t.createdAt.toISOString(),
    expiresAt: t.expiresAt?.toISOString() ?? null,
    lastUsedAt: t.lastUsedAt?.toISOString() ?? null,
    revokedAt: t.revokedAt?.toISOString() ?? null,
  };
}
