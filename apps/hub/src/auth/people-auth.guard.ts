import type { AuditActor } from '@flotilla/contract';
import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { HUB_CONFIG, type HubConfig, type PeopleRole } from '../config/hub-config.js';
import { HubError } from '../common/hub-error.js';
import { bearerToken, sameSecret } from '../common/secrets.js';
import { ApiTokenAuthenticator } from './api-token-authenticator.js';
import { OidcVerifier } from './oidc-verifier.js';
import type { PeopleRequest, Principal } from './principal.js';
import { RateLimiter } from './rate-limiter.service.js';
import { requiredRole, roleAllows } from './role-policy.js';
import { PUBLIC_KEY, ROLES_KEY } from './roles.decorator.js';

const API_TOKEN_PREFIX = 'flp_';
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * The global guard of every route not marked @Public(): who is calling (admin token, API token or
 * OIDC JWT), within their rate limit, with the role the route needs (@Roles, else GET = viewer and
 * anything else = admin). Sets `req.principal`, which @Actor() turns into the audit actor.
 *
 * A hub with neither FLOTILLA_ADMIN_TOKEN nor OIDC configured is open (development): a call without
 * a token acts as admin; a call with one is still checked, so tokens behave the same everywhere.
 */
@Injectable()
export class PeopleAuthGuard implements CanActivate {
  private readonly oidc: OidcVerifier | null;

  constructor(
    private readonly reflector: Reflector,
    private readonly tokens: ApiTokenAuthenticator,
    private readonly limiter: RateLimiter,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {
    this.oidc = config.auth.oidc ? new OidcVerifier(config.auth.oidc) : null;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_KEY, targets)) return true;
    const req = context.switchToHttp().getRequest<PeopleRequest>();
    const need = requiredRole(req.method, this.reflector.getAllAndOverride<PeopleRole>(ROLES_KEY, targets));

    const principal = await this.identify(req);
    if (principal.rateKey) {
      await this.limiter.take(principal.rateKey, this.config.auth.rateLimitPerMinute.people, principal.actor);
    }
    if (!roleAllows(principal.role, need)) {
      throw new HubError(
        403,
        'forbidden',
        `${principal.actor} has the ${principal.role} role; ${req.method} ${req.path} needs ${need}`,
      );
    }
    req.principal = principal;
    return true;
  }

  private async identify(req: PeopleRequest): Promise<Principal> {
    const header = req.headers.authorization;
    const token = bearerToken(header);
    const authRequired = this.config.auth.adminToken !== null || this.oidc !== null;
    if (!token) {
      if (header !== undefined || authRequired) {
        throw new HubError(
          401,
          'unauthorized',
          'this hub requires "Authorization: Bearer <token>" (an API token, an OIDC token or the admin token)',
        );
      }
      // Nobody proved anything, so nobody may name themselves: a header would let any caller write
      // someone else's name into the audit log of a hub that anyone can reach.
      return { kind: 'open', role: 'admin', actor: 'user:admin', rateKey: null };
    }
    const adminToken = this.config.auth.adminToken;
    if (adminToken !== null && sameSecret(token, adminToken)) {
      // The admin token is shared by whoever breaks the ice, so the caller may say who they are. It
      // is not rate-limited: it is the way in during an incident, when something else may be hammering.
      return { kind: 'admin-token', role: 'admin', actor: namedActor(req) ?? 'user:admin', rateKey: null };
    }
    if (token.startsWith(API_TOKEN_PREFIX)) {
      const t = await this.tokens.authenticate(token);
      return { kind: 'api-token', role: t.role, actor: `token:${t.name}`, rateKey: `token:${t.name}` };
    }
    if (this.oidc && JWT_SHAPE.test(token)) {
      const id = await this.oidc.verify(token);
      return { kind: 'oidc', role: id.role, actor: `user:${id.subject}`, rateKey: `oidc:${id.subject}` };
    }
    throw new HubError(
      401,
      'unauthorized',
      adminToken !== null
        ? 'the bearer token is not the admin token, an API token or an OIDC token this hub accepts'
        : 'the bearer token is not an API token or an OIDC token this hub accepts',
    );
  }
}

/** `X-Flotilla-Actor`, which only callers holding the shared admin token may use. */
function namedActor(req: PeopleRequest): AuditActor | null {
  const named = req.headers['x-flotilla-actor'];
  return typeof named === 'string' && named.trim() !== '' ? `user:${named.trim().slice(0, 100)}` : null;
}
