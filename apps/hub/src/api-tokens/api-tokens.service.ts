import type { AuditActor, Page, ApiTokenView, CreateApiToken, CreatedApiToken } from '@flotilla/contract';
import { pageArgs, pageOf, type PageQuery } from '../common/name-page.js';
import { Injectable } from '@nestjs/common';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import { hashSecret, newSecret } from '../common/secrets.js';
import { AuditLog } from '../audit/audit.service.js';
import type { ApiToken } from '../generated/prisma/client.js';
import { isPeopleRole } from '../auth/role-policy.js';

/** People's API tokens: created by an admin, shown once, stored as a hash, listable and revocable. */
@Injectable()
export class ApiTokensService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
  ) {}

  async create(input: CreateApiToken, actor: AuditActor): Promise<CreatedApiToken> {
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
  async revoke(name: string, actor: AuditActor): Promise<ApiTokenView> {
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
