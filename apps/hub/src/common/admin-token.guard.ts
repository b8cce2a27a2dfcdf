import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { HubError } from './hub-error.js';
import { bearerToken, sameSecret } from './secrets.js';

/** With FLOTILLA_ADMIN_TOKEN set, the people's API requires it as a bearer token. */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  constructor(@Inject(HUB_CONFIG) private readonly config: HubConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const expected = this.config.auth.adminToken;
    if (!expected) return true;
    const token = bearerToken(context.switchToHttp().getRequest<Request>().headers.authorization);
    if (!token)
      throw new HubError(401, 'unauthorized', 'this hub requires "Authorization: Bearer <admin token>"');
    if (!sameSecret(token, expected)) throw new HubError(401, 'unauthorized', 'the admin token is wrong');
    return true;
  }
}
