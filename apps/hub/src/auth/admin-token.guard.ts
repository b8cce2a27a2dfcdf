import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import type { PeopleRequest } from './principal.js';
import { HubError } from '../common/hub-error.js';

/**
 * Superseded by the global PeopleAuthGuard (apps/hub/src/auth), which authenticates every route not
 * marked @Public() and checks its @Roles. Controllers written before roles still name this guard; it
 * now only insists that PeopleAuthGuard established who is calling, so such a route can never be
 * reached anonymously even if it was (wrongly) also marked @Public().
 */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    if (!context.switchToHttp().getRequest<PeopleRequest>().principal) {
      throw new HubError(
        401,
        'unauthorized',
        'this route needs a people credential ("Authorization: Bearer <token>")',
      );
    }
    return true;
  }
}
