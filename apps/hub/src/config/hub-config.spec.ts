import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { HubConfigError, devModeWarnings, loadHubConfig, renderEnvExample } from './hub-config.js';

/** The tests below are about other variables: they run as a development hub. */
const DEV = { FLOTILLA_DEV_MODE: '1' };

describe('loadHubConfig', () => {
  it('fills every default into a nested config, with an embedded database when DATABASE_URL is unset', () => {
    expect(loadHubConfig({ FLOTILLA_DEV_MODE: '1' })).toEqual({
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
      openApi: 'public',
      console: { dir: expect.stringMatching(/apps\/console\/dist$/) as string },
      appsets: { deletionGuardPercent: 50 },
      fleet: { repositories: '' },
      healthRules: { luaDir: null },
      rollouts: { tickSeconds: 5, offlineAfterSeconds: 120 },
      webhooks: { secret: null },
      breakGlass: { maxMinutes: 1440 },
      render: {
        kustomizeBinary: null,
        allowRemoteBases: false,
        helmBinary: null,
        helmKubeVersion: '1.32.0',
        helmRepositoryCacheSeconds: 60,
        helmRepositoryPollSeconds: 180,
        timeoutSeconds: 60,
        maxOutputBytes: 33554432,
        // RENDER_CONCURRENCY=0: one render per CPU of this machine.
        concurrency: availableParallelism(),
      },
      secrets: { key: null, previousKeys: [] },
      devMode: true,
      git: {
        localRepositories: 'any',
        connectTimeoutSeconds: 15,
        idleTimeoutSeconds: 60,
        fetchMaxSeconds: 3600,
      },
      reverts: { author: { name: 'Flotilla', email: 'flotilla@localhost' }, afterRollback: true },
      notifications: { timeoutSeconds: 10 },
      metrics: { reasonsMaxAgeSeconds: 30 },
      retention: {
        reportPayloadDays: 7,
        reportIdDays: 90,
        syncRunDays: 365,
        bundleDays: 30,
        sourceVerificationDays: 90,
        intervalMinutes: 60,
        batchSize: 1000,
      },
      audit: { chainLanes: 8 },
    });
  });

  it('reads retention periods, and refuses a report payload kept longer than its id', () => {
    const c = loadHubConfig({
      ...DEV,
      RETENTION_REPORT_PAYLOAD_DAYS: '2',
      RETENTION_REPORT_ID_DAYS: '30',
      RETENTION_SYNC_RUN_DAYS: '0',
      RETENTION_BUNDLE_DAYS: '14',
      RETENTION_SOURCE_VERIFICATION_DAYS: '0',
      RETENTION_INTERVAL_MINUTES: '15',
      RETENTION_BATCH_SIZE: '500',
    });
    expect(c.retention).toEqual({
      reportPayloadDays: 2,
      reportIdDays: 30,
      syncRunDays: 0,
      bundleDays: 14,
      sourceVerificationDays: 0,
      intervalMinutes: 15,
      batchSize: 500,
    });
    for (const payloadDays of ['31', '0']) {
      let error: unknown;
      try {
        loadHubConfig({ ...DEV, RETENTION_REPORT_PAYLOAD_DAYS: payloadDays, RETENTION_REPORT_ID_DAYS: '30' });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(HubConfigError);
      expect((error as HubConfigError).issues).toEqual([
        {
          variable: 'RETENTION_REPORT_PAYLOAD_DAYS',
          message: expect.stringContaining('between 1 and') as string,
        },
      ]);
    }
    // Ids kept forever: payloads may be too.
    expect(
      loadHubConfig({ ...DEV, RETENTION_REPORT_PAYLOAD_DAYS: '0', RETENTION_REPORT_ID_DAYS: '0' }).retention
        .reportPayloadDays,
    ).toBe(0);
    expect(() => loadHubConfig({ ...DEV, RETENTION_BATCH_SIZE: '0' })).toThrow(/RETENTION_BATCH_SIZE/);
  });

  it('reads the audit chain lane count (default 8), and refuses none or more than a smallint needs', () => {
    expect(loadHubConfig(DEV).audit).toEqual({ chainLanes: 8 });
    expect(loadHubConfig({ ...DEV, FLOTILLA_AUDIT_CHAIN_LANES: '1' }).audit).toEqual({ chainLanes: 1 });
    for (const lanes of ['0', '257', '2.5', 'many']) {
      expect(() => loadHubConfig({ ...DEV, FLOTILLA_AUDIT_CHAIN_LANES: lanes })).toThrow(
        /FLOTILLA_AUDIT_CHAIN_LANES/,
      );
    }
  });

  it('reads PostgreSQL, roles and numbers from the environment; an empty variable counts as unset', () => {
    const c = loadHubConfig({
      ...DEV,
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
      ...DEV,
      FLOTILLA_OIDC_ISSUER: 'https://login.example.com/',
      FLOTILLA_OIDC_AUDIENCE: 'flotilla',
      FLOTILLA_OIDC_ROLE_MAP: 'sre=operator, platform-admins=admin',
    });
    expect(c.auth.oidc).toEqual({
      issuer: 'https://login.example.com/',
      audience: 'flotilla',
      jwksUrl: null,
      clientId: null,
      scopes: 'openid profile email',
      roleClaim: 'groups',
      roleMap: { sre: 'operator', 'platform-admins': 'admin' },
    });
    expect(() => loadHubConfig({ ...DEV, FLOTILLA_OIDC_ISSUER: 'https://login.example.com/' })).toThrow(
      /FLOTILLA_OIDC_AUDIENCE: required when FLOTILLA_OIDC_ISSUER is set/,
    );
    expect(() => loadHubConfig({ ...DEV, FLOTILLA_OIDC_ROLE_MAP: 'sre=root' })).toThrow(
      /FLOTILLA_OIDC_ROLE_MAP: expected group=viewer\|operator\|admin pairs; got "sre=root"/,
    );
  });

  it('serves the console from FLOTILLA_CONSOLE_DIR, or not at all when it is off', () => {
    expect(loadHubConfig({ ...DEV, FLOTILLA_CONSOLE_DIR: '/srv/console' }).console).toEqual({
      dir: '/srv/console',
    });
    expect(loadHubConfig({ ...DEV, FLOTILLA_CONSOLE_DIR: 'off' }).console).toEqual({ dir: null });
  });

  it('names every wrong variable and why', () => {
    let error: unknown;
    try {
      loadHubConfig({
        ...DEV,
        PORT: 'eighty',
        HUB_ROLES: 'api,cron',
        DATABASE_URL: 'mysql://x',
        FLOTILLA_ADMIN_TOKEN: 'short',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HubConfigError);
    const issues = (error as HubConfigError).issues;
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
      ...DEV,
      KUSTOMIZE_BINARY: '/usr/local/bin/kustomize',
      KUSTOMIZE_ALLOW_REMOTE_BASES: 'true',
      FLOTILLA_SECRETS_KEY: key.toUpperCase(),
      FLOTILLA_SECRETS_KEY_PREVIOUS: `${'cd'.repeat(32)},${'ef'.repeat(32)}`,
    });
    expect(c.render).toMatchObject({ kustomizeBinary: '/usr/local/bin/kustomize', allowRemoteBases: true });
    expect(c.secrets).toEqual({ key, previousKeys: ['cd'.repeat(32), 'ef'.repeat(32)] });
    let error: unknown;
    try {
      loadHubConfig({ ...DEV, FLOTILLA_SECRETS_KEY: 'short', KUSTOMIZE_ALLOW_REMOTE_BASES: 'yes' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HubConfigError);
    expect((error as HubConfigError).issues.map((i) => i.variable).sort()).toEqual([
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

  it('matches the committed .env.example, which documents FLOTILLA_DEV_MODE', () => {
    const committed = readFileSync(new URL('../../.env.example', import.meta.url), 'utf8');
    expect(committed).toBe(renderEnvExample());
    expect(committed).toContain('\nFLOTILLA_DEV_MODE=false\n');
  });
});

describe('start-up safety', () => {
  const key = 'ab'.repeat(32);
  const token = 'admin-token-0123456789';

  it('refuses an open hub without a secrets key, in one line naming every variable to set', () => {
    let error: unknown;
    try {
      loadHubConfig({ NODE_ENV: 'production' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HubConfigError);
    const message = (error as HubConfigError).message;
    expect(message).not.toContain('\n');
    expect(message).toBe(
      'refusing to start: set FLOTILLA_ADMIN_TOKEN or FLOTILLA_OIDC_ISSUER (without it anyone who reaches the hub is admin) and FLOTILLA_SECRETS_KEY (without it repository credentials cannot be stored), or FLOTILLA_DEV_MODE=1 for a development hub',
    );
    expect((error as HubConfigError).issues.map((i) => i.variable)).toEqual([
      'FLOTILLA_ADMIN_TOKEN',
      'FLOTILLA_SECRETS_KEY',
    ]);
  });

  it('names only what is missing: a token without a key, or a key without auth', () => {
    expect(() => loadHubConfig({ FLOTILLA_ADMIN_TOKEN: token })).toThrow(
      /^refusing to start: set FLOTILLA_SECRETS_KEY \(without it repository credentials cannot be stored\), or FLOTILLA_DEV_MODE=1/,
    );
    expect(() => loadHubConfig({ FLOTILLA_SECRETS_KEY: key, FLOTILLA_DEV_MODE: '0' })).toThrow(
      /^refusing to start: set FLOTILLA_ADMIN_TOKEN or FLOTILLA_OIDC_ISSUER \(without it anyone who reaches the hub is admin\), or/,
    );
  });

  it('starts with an admin token or OIDC and a secrets key, and has nothing to warn about', () => {
    const withToken = loadHubConfig({ FLOTILLA_ADMIN_TOKEN: token, FLOTILLA_SECRETS_KEY: key });
    expect(withToken.devMode).toBe(false);
    expect(devModeWarnings(withToken)).toEqual([]);
    const withOidc = loadHubConfig({
      FLOTILLA_OIDC_ISSUER: 'https://login.example.com/',
      FLOTILLA_OIDC_AUDIENCE: 'flotilla',
      FLOTILLA_SECRETS_KEY: key,
    });
    expect(devModeWarnings(withOidc)).toEqual([]);
  });

  it('in development mode starts open, and warns of each safety it runs without', () => {
    expect(devModeWarnings(loadHubConfig({ FLOTILLA_DEV_MODE: '1' }))).toEqual([
      'DEVELOPMENT MODE (FLOTILLA_DEV_MODE=1): not for production',
      'no FLOTILLA_ADMIN_TOKEN or OIDC: the API is open, anyone who reaches the hub is admin',
      'no FLOTILLA_SECRETS_KEY: repository credentials cannot be stored',
    ]);
    // Development mode is said even when nothing else is missing: it is never silent.
    expect(
      devModeWarnings(
        loadHubConfig({ FLOTILLA_DEV_MODE: '1', FLOTILLA_ADMIN_TOKEN: token, FLOTILLA_SECRETS_KEY: key }),
      ),
    ).toEqual(['DEVELOPMENT MODE (FLOTILLA_DEV_MODE=1): not for production']);
  });

  it('accepts 1/true or 0/false for FLOTILLA_DEV_MODE, and nothing else', () => {
    expect(loadHubConfig({ FLOTILLA_DEV_MODE: 'true' }).devMode).toBe(true);
    expect(() => loadHubConfig({ FLOTILLA_DEV_MODE: 'false' })).toThrow(/^refusing to start/);
    expect(() => loadHubConfig({ FLOTILLA_DEV_MODE: 'yes' })).toThrow(
      /FLOTILLA_DEV_MODE: expected 1 or true \(development hub\), 0 or false/,
    );
  });
});
