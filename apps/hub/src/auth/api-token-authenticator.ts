import { Injectable } from '@nestjs/common';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import { hashSecret } from '../common/secrets.js';
import type { PeopleRole } from '../config/hub-config.js';
import { isPeopleRole } from './role-policy.js';

/** lastUsedAt is a hint for "is this token still in use?", not a log: one write a minute is enough. */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * Who a person's API token names, on every request. Managing tokens (create, list, revoke, with an
 * audit event each) is the api-tokens feature's; this reads the table alone, so the guard needs no feature.
 */
@Injectable()
export class ApiTokenAuthenticator {
  constructor(private readonly db: Database) {}

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
