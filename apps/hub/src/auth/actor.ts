import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { PeopleRequest } from './principal.js';

/**
 * Who made a people-API call, for the audit log: the identity PeopleAuthGuard proved (`token:<name>`,
 * `oidc:<email>`, or `user:<name>` for the shared admin token and an open hub).
 */
export const Actor = createParamDecorator((_data: unknown, ctx: ExecutionContext): string => {
  const req = ctx.switchToHttp().getRequest<PeopleRequest>();
  return req.principal?.actor ?? 'user:unknown';
});
