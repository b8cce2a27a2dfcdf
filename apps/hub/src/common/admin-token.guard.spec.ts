import type { ExecutionContext } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { loadHubConfig } from '../config/hub-config.js';
import { AdminTokenGuard } from './admin-token.guard.js';
import { HubError } from './hub-error.js';

const TOKEN = 'admin-token-0123456789';

function contextWith(authorization?: string): ExecutionContext {
  const req = { headers: authorization === undefined ? {} : { authorization } };
  return { switchToHttp: () => ({ getRequest: () => req }) } as unknown as ExecutionContext;
}

function refusal(guard: AdminTokenGuard, auth?: string): string {
  try {
    guard.canActivate(contextWith(auth));
  } catch (e) {
    if (e instanceof HubError) return `${e.status} ${e.code}`;
    throw e;
  }
  return 'allowed';
}

describe('AdminTokenGuard', () => {
  it('lets everyone in when no admin token is configured', () => {
    expect(refusal(new AdminTokenGuard(loadHubConfig({})))).toBe('allowed');
  });

  it('requires the configured token as a bearer token', () => {
    const guard = new AdminTokenGuard(loadHubConfig({ FLOTILLA_ADMIN_TOKEN: TOKEN }));
    expect(refusal(guard)).toBe('401 unauthorized');
    expect(refusal(guard, 'Bearer wrong-token')).toBe('401 unauthorized');
    expect(refusal(guard, `Basic ${TOKEN}`)).toBe('401 unauthorized');
    expect(refusal(guard, `Bearer ${TOKEN}`)).toBe('allowed');
  });
});
