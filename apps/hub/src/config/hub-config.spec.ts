import { describe, expect, it } from 'vitest';
import { ConfigError, loadHubConfig, renderEnvExample } from './hub-config.js';

describe('loadHubConfig', () => {
  it('fills every default into a nested config, with an embedded database when DATABASE_URL is unset', () => {
    expect(loadHubConfig({})).toEqual({
      http: { host: '127.0.0.1', port: 8080 },
      database: { kind: 'pglite', dir: '.flotilla/db' },
      redis: { url: 'redis://127.0.0.1:6379', prefix: 'flotilla' },
      roles: { api: true, worker: true },
      dataDir: '.flotilla',
      sources: { pollIntervalSeconds: 30 },
      auth: {
        adminToken: null,
        bootstrapTokenTtlSeconds: 3600,
        credentialTtlSeconds: 0,
        credentialRotationGraceSeconds: 300,
        oidc: null,
        rateLimitPerMinute: { people: 600, agent: 600 },
      },
      limits: { apiBodyBytes: 1048576, agentReportBodyBytes: 10485760 },
      log: { level: 'info' },
      appsets: { deletionGuardPercent: 50 },
      fleet: { repositories: '' },
      rollouts: { tickSeconds: 5, offlineAfterSeconds: 120 },
      webhooks: { secret: null },
      breakGlass: { maxMinutes: 1440 },
      render: {
        kustomizeBinary: null,
        allowRemoteBases: false,
        timeoutSeconds: 60,
        maxOutputBytes: 33554432,
      },
      secrets: { key: null, previousKeys: [] },
    });
  });

  it('reads PostgreSQL, roles and numbers from the environment; an empty variable counts as unset', () => {
    const c = loadHubConfig({
      DATABASE_URL: 'postgresql://u@db:5432/hub',
      HUB_ROLES: 'worker',
      PORT: '9000',
      SOURCE_POLL_INTERVAL_SECONDS: '1.5',
      FLOTILLA_ADMIN_TOKEN: '',
    });
    expect(c.database).toEqual({ kind: 'postgres', url: 'postgresql://u@db:5432/hub' });
    expect(c.roles).toEqual({ api: false, worker: true });
    expect(c.http.port).toBe(9000);
    expect(c.sources.pollIntervalSeconds).toBe(1.5);
    expect(c.auth.adminToken).toBeNull();
  });

  it('reads the OIDC issuer, audience and group-to-role map; an issuer without an audience is refused', () => {
    const c = loadHubConfig({
      FLOTILLA_OIDC_ISSUER: 'https://login.example.com/',
      FLOTILLA_OIDC_AUDIENCE: 'flotilla',
      FLOTILLA_OIDC_ROLE_MAP: 'sre=operator, platform-admins=admin',
    });
    expect(c.auth.oidc).toEqual({
      issuer: 'https://login.example.com/',
      audience: 'flotilla',
      jwksUrl: null,
      roleClaim: 'groups',
      roleMap: { sre: 'operator', 'platform-admins': 'admin' },
    });
    expect(() => loadHubConfig({ FLOTILLA_OIDC_ISSUER: 'https://login.example.com/' })).toThrow(
      /FLOTILLA_OIDC_AUDIENCE: required when FLOTILLA_OIDC_ISSUER is set/,
    );
    expect(() => loadHubConfig({ FLOTILLA_OIDC_ROLE_MAP: 'sre=root' })).toThrow(
      /FLOTILLA_OIDC_ROLE_MAP: expected group=viewer\|operator\|admin pairs; got "sre=root"/,
    );
  });

  it('names every wrong variable and why', () => {
    let error: unknown;
    try {
      loadHubConfig({
        PORT: 'eighty',
        HUB_ROLES: 'api,cron',
        DATABASE_URL: 'mysql://x',
        FLOTILLA_ADMIN_TOKEN: 'short',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const issues = (error as ConfigError).issues;
    expect(issues.map((i) => i.variable).sort()).toEqual([
      'DATABASE_URL',
      'FLOTILLA_ADMIN_TOKEN',
      'HUB_ROLES',
      'PORT',
    ]);
    expect(issues.find((i) => i.variable === 'HUB_ROLES')?.message).toContain('api, worker');
    expect((error as Error).message).toContain('PORT:');
  });

  it('reads the render and secrets-key variables, refusing a key that is not 32 bytes of hex', () => {
    const key = 'ab'.repeat(32);
    const c = loadHubConfig({
      KUSTOMIZE_BINARY: '/usr/local/bin/kustomize',
      KUSTOMIZE_ALLOW_REMOTE_BASES: 'true',
      FLOTILLA_SECRETS_KEY: key.toUpperCase(),
      FLOTILLA_SECRETS_KEY_PREVIOUS: `${'cd'.repeat(32)},${'ef'.repeat(32)}`,
    });
    expect(c.render).toMatchObject({ kustomizeBinary: '/usr/local/bin/kustomize', allowRemoteBases: true });
    expect(c.secrets).toEqual({ key, previousKeys: ['cd'.repeat(32), 'ef'.repeat(32)] });
    let error: unknown;
    try {
      loadHubConfig({ FLOTILLA_SECRETS_KEY: 'short', KUSTOMIZE_ALLOW_REMOTE_BASES: 'yes' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues.map((i) => i.variable).sort()).toEqual([
      'FLOTILLA_SECRETS_KEY',
      'KUSTOMIZE_ALLOW_REMOTE_BASES',
    ]);
  });

  it('documents every variable in .env.example, optional ones commented out', () => {
    const text = renderEnvExample();
    expect(text).toContain('\nPORT=8080\n');
    expect(text).toContain('\nHUB_ROLES=api,worker\n');
    expect(text).toContain('\n# DATABASE_URL=\n');
    expect(text).toContain('\n# FLOTILLA_ADMIN_TOKEN=\n');
  });
});
