import type { AuditActor } from '@flotilla/contract';
import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { PeopleRequest } from './principal.js';

/**
 * Who made a people-API call, for the audit log: the identity PeopleAuthGuard proved (`token:<name>`,
 * `user:<oidc subject>`, `user:<name>` for the shared admin token, `user:anonymous` on an open hub).
 */
export const Actor = createParamDecorator((_data: unknown, ctx: ExecutionContext): AuditActor => {
  const req = ctx.switchToHttp().getRequest<PeopleRequest>();
  return req.principal?.actor ?? 'user:unknown';
});
