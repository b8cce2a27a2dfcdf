import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';

/**
 * Who made a people-API call, for the audit log. Until RBAC lands every caller is the admin;
 * an `X-Flotilla-Actor` header lets the CLI and CI name themselves.
 */
export const Actor = createParamDecorator((_data: unknown, ctx: ExecutionContext): string => {
  const req = ctx.switchToHttp().getRequest<Request>();
  const named = req.headers['x-flotilla-actor'];
  return typeof named === 'string' && named.trim() !== ''
    ? `user:${named.trim().slice(0, 100)}`
    : 'user:admin';
});
