import { describe, expect, it } from 'vitest';
import { assignmentSyncSettingsOf, syncPolicyOf } from './sync-policy.js';
import { SyncSettingsError } from './sync-settings-fields.js';
import { checkSyncSettingsSpec, targetSyncSettingsOf } from './target-sync-settings.js';

describe('syncPolicyOf', () => {
  it("applies Flotilla's defaults when the template says nothing", () => {
    expect(syncPolicyOf(undefined)).toEqual({
      automated: true,
      selfHeal: true,
      prune: true,
      allowEmpty: false,
    });
  });

  it("reads Argo CD's automated block with Argo CD's defaults", () => {
    expect(syncPolicyOf({ automated: {} })).toEqual({
      automated: true,
      selfHeal: false,
      prune: false,
      allowEmpty: false,
    });
    expect(syncPolicyOf({ automated: { prune: true, selfHeal: true } })).toEqual({
      automated: true,
      selfHeal: true,
      prune: true,
      allowEmpty: false,
    });
  });

  it('treats an Argo CD syncPolicy without automated as manual', () => {
    expect(syncPolicyOf({ syncOptions: ['CreateNamespace=true'] })).toEqual({
      automated: false,
      selfHeal: false,
      prune: true,
      allowEmpty: false,
      createNamespace: true,
    });
  });

  it("reads Flotilla's flat booleans", () => {
    expect(syncPolicyOf({ automated: true, selfHeal: false })).toEqual({
      automated: true,
      selfHeal: false,
      prune: true,
      allowEmpty: false,
    });
  });
});

describe('RespectIgnoreDifferences', () => {
  it("maps Argo CD's sync option beside automated, and only when it is there", () => {
    expect(
      syncPolicyOf({
        automated: { selfHeal: true },
        syncOptions: ['CreateNamespace=true', 'RespectIgnoreDifferences=true'],
      }),
    ).toEqual({
      automated: true,
      selfHeal: true,
      prune: false,
      allowEmpty: false,
      respectIgnoreDifferences: true,
      createNamespace: true,
    });
    expect(
      syncPolicyOf({ automated: {}, syncOptions: ['RespectIgnoreDifferences=false'] })
        .respectIgnoreDifferences,
    ).toBe(false);
    expect(syncPolicyOf({ automated: {}, syncOptions: ['ServerSideApply=true'] })).not.toHaveProperty(
      'respectIgnoreDifferences',
    );
  });
});

describe('targetSyncSettingsOf', () => {
  const replicas = { group: 'apps', kind: 'Deployment', jsonPointers: ['/spec/replicas'] };

  it('stores the policy alone when there are no rules, so existing targets compare equal', () => {
    expect(targetSyncSettingsOf({ syncPolicy: { automated: { selfHeal: true } } })).toEqual({
      automated: true,
      selfHeal: true,
      prune: false,
      allowEmpty: false,
    });
    expect(targetSyncSettingsOf({ ignoreDifferences: [] })).not.toHaveProperty('ignoreDifferences');
  });

  it("stores the rules with the contract's defaults, and the assignment gets them back apart", () => {
    const stored = targetSyncSettingsOf({
      syncPolicy: { automated: { selfHeal: true }, syncOptions: ['RespectIgnoreDifferences=true'] },
      ignoreDifferences: [
        replicas,
        {
          kind: 'ConfigMap',
          name: 'app',
          jqPathExpressions: ['.data.cache'],
          managedFieldsManagers: ['kube-controller'],
        },
      ],
    });
    expect(stored.ignoreDifferences).toEqual([
      {
        group: 'apps',
        kind: 'Deployment',
        jsonPointers: ['/spec/replicas'],
        jqPathExpressions: [],
        managedFieldsManagers: [],
      },
      {
        group: '',
        kind: 'ConfigMap',
        name: 'app',
        jsonPointers: [],
        jqPathExpressions: ['.data.cache'],
        managedFieldsManagers: ['kube-controller'],
      },
    ]);
    const sent = assignmentSyncSettingsOf(JSON.parse(JSON.stringify(stored)));
    expect(sent.syncPolicy).toEqual({
      automated: true,
      selfHeal: true,
      prune: false,
      allowEmpty: false,
      respectIgnoreDifferences: true,
    });
    expect(sent.ignoreDifferences).toEqual(stored.ignoreDifferences);
  });

  it('reads a policy stored before rules existed as having none', () => {
    expect(
      assignmentSyncSettingsOf({ automated: true, selfHeal: true, prune: true, allowEmpty: false }),
    ).toEqual({
      syncPolicy: { automated: true, selfHeal: true, prune: true, allowEmpty: false },
      ignoreDifferences: [],
    });
  });

  function failure(f: () => unknown): { path: string; message: string } {
    try {
      f();
    } catch (e) {
      if (e instanceof SyncSettingsError) return { path: e.path, message: e.message };
      throw e;
    }
    throw new Error('expected a SyncSettingsError');
  }

  it('names the bad JSON pointer, jq expression or field by its path in the ApplicationSet', () => {
    expect(
      failure(() =>
        targetSyncSettingsOf({
          ignoreDifferences: [{ kind: 'Deployment', jsonPointers: ['/spec/replicas', 'spec/x'] }],
        }),
      ),
    ).toMatchObject({ path: 'spec.template.spec.ignoreDifferences[0].jsonPointers[1]' });
    expect(
      failure(() =>
        targetSyncSettingsOf({ ignoreDifferences: [{ kind: 'Deployment', jsonPointers: ['spec/x'] }] }),
      ).message,
    ).toContain("'spec/x' is not a JSON pointer");
    expect(
      failure(() =>
        targetSyncSettingsOf({
          ignoreDifferences: [replicas, { kind: 'Secret', jqPathExpressions: ['.data['] }],
        }),
      ).path,
    ).toBe('spec.template.spec.ignoreDifferences[1].jqPathExpressions[0]');
    expect(failure(() => targetSyncSettingsOf({ ignoreDifferences: [{ jsonPointers: ['/a'] }] })).path).toBe(
      'spec.template.spec.ignoreDifferences[0].kind',
    );
    expect(
      failure(() => targetSyncSettingsOf({ ignoreDifferences: [{ kind: 'X', jsonPointers: [3] }] })).path,
    ).toBe('spec.template.spec.ignoreDifferences[0].jsonPointers[0]');
    expect(failure(() => targetSyncSettingsOf({ ignoreDifferences: { kind: 'X' } })).path).toBe(
      'spec.template.spec.ignoreDifferences',
    );
    expect(
      failure(() => targetSyncSettingsOf({ syncPolicy: { syncOptions: ['RespectIgnoreDifferences'] } })).path,
    ).toBe('spec.template.spec.syncPolicy.syncOptions[0]');
  });
});

describe('checkSyncSettingsSpec', () => {
  const appSet = (ignoreDifferences: unknown) => ({ spec: { template: { spec: { ignoreDifferences } } } });

  it('refuses a literal bad rule at submission', () => {
    expect(() =>
      checkSyncSettingsSpec(appSet([{ kind: 'Deployment', jsonPointers: ['/ok', 'bad'] }])),
    ).toThrow(expect.objectContaining({ path: 'spec.template.spec.ignoreDifferences[0].jsonPointers[1]' }));
  });

  it('leaves templated rules to expansion, where each target renders its own', () => {
    expect(() =>
      checkSyncSettingsSpec(
        appSet([{ kind: 'Deployment', name: '{{.name}}', jsonPointers: ['{{.pointer}}'] }]),
      ),
    ).not.toThrow();
    expect(() => checkSyncSettingsSpec({ spec: { template: { spec: {} } } })).not.toThrow();
  });
});

describe('sync options and syncPolicy fields Flotilla does not honour', () => {
  const withPolicy = (syncPolicy: unknown) => ({ spec: { template: { spec: { syncPolicy } } } });
  const refusal = (syncPolicy: unknown): SyncSettingsError => {
    try {
      checkSyncSettingsSpec(withPolicy(syncPolicy));
    } catch (e) {
      if (e instanceof SyncSettingsError) return e;
      throw e;
    }
    throw new Error('expected the policy to be refused');
  };

  it('refuses each one at submission, naming the field', () => {
    expect(
      refusal({ syncOptions: ['ServerSideApply=false', 'ClientSideApplyMigration=true'] }),
    ).toMatchObject({
      path: 'spec.template.spec.syncPolicy.syncOptions[1]',
      code: 'unsupported-sync-option',
    });
    expect(refusal({ automated: { prune: true, selfheal: true } })).toMatchObject({
      path: 'spec.template.spec.syncPolicy.automated.selfheal',
      code: 'invalid-sync-policy',
    });
    expect(refusal({ automated: { prune: 'yes' } }).message).toBe('expected true or false, got "yes"');
    expect(refusal({ autoSync: true }).path).toBe('spec.template.spec.syncPolicy.autoSync');
  });

  it('accepts what it honours, and leaves templated values to expansion', () => {
    expect(() =>
      checkSyncSettingsSpec(
        withPolicy({
          automated: { prune: true, selfHeal: true, allowEmpty: false, enabled: true },
          syncOptions: [
            'ServerSideApply=true',
            'PruneLast=true',
            'RespectIgnoreDifferences=true',
            '{{.opt}}',
          ],
        }),
      ),
    ).not.toThrow();
    expect(() => checkSyncSettingsSpec(withPolicy({ automated: { selfHeal: '{{.heal}}' } }))).not.toThrow();
  });

  it('carries CreateNamespace=true and its namespace metadata to the agent, and only with each other', () => {
    expect(
      syncPolicyOf({
        automated: {},
        syncOptions: ['CreateNamespace=true'],
        managedNamespaceMetadata: { labels: { team: 'a' } },
      }),
    ).toMatchObject({
      createNamespace: true,
      managedNamespaceMetadata: { labels: { team: 'a' }, annotations: {} },
    });
    const alone = refusal({ managedNamespaceMetadata: { labels: { team: 'a' } } });
    expect(alone.path).toBe('spec.template.spec.syncPolicy.managedNamespaceMetadata');
    expect(alone.message).toContain('only with the sync option CreateNamespace=true');
    expect(
      refusal({ syncOptions: ['CreateNamespace=true'], managedNamespaceMetadata: { labels: { team: 3 } } })
        .path,
    ).toBe('spec.template.spec.syncPolicy.managedNamespaceMetadata.labels.team');
  });

  it('carries PrunePropagationPolicy to the agent; absent, the agent uses foreground', () => {
    expect(syncPolicyOf({ automated: {}, syncOptions: ['PrunePropagationPolicy=orphan'] })).toMatchObject({
      prunePropagationPolicy: 'orphan',
    });
    expect(syncPolicyOf({ automated: {} }).prunePropagationPolicy).toBeUndefined();
    expect(
      syncPolicyOf({ automated: {}, syncOptions: ['ApplyOutOfSyncOnly=true', 'FailOnSharedResource=true'] }),
    ).toMatchObject({ applyOutOfSyncOnly: true, failOnSharedResource: true });
    expect(
      syncPolicyOf({ automated: {}, syncOptions: ['Replace=true', 'Force=true', 'PruneLast=true'] }),
    ).toMatchObject({ replace: true, force: true, pruneLast: true });
    expect(syncPolicyOf({ automated: {} })).not.toHaveProperty('replace');
    expect(syncPolicyOf({ automated: {}, syncOptions: ['ServerSideApply=false'] })).toMatchObject({
      serverSideApply: false,
    });
    expect(syncPolicyOf({ automated: {} })).not.toHaveProperty('serverSideApply');
    const bad = refusal({ syncOptions: ['PrunePropagationPolicy=cascade'] });
    expect(bad.path).toBe('spec.template.spec.syncPolicy.syncOptions[0]');
    expect(bad.message).toContain('PrunePropagationPolicy=foreground or PrunePropagationPolicy=background');
  });

  it('fails the expansion of a target whose templated option is refused', () => {
    expect(() =>
      targetSyncSettingsOf({ syncPolicy: { syncOptions: ['ClientSideApplyMigration=true'] } }),
    ).toThrow(expect.objectContaining({ path: 'spec.template.spec.syncPolicy.syncOptions[0]' }));
  });

  it("reads Argo CD's automated.enabled: false as manual, keeping prune", () => {
    expect(syncPolicyOf({ automated: { enabled: false, prune: true, selfHeal: true } })).toEqual({
      automated: false,
      selfHeal: false,
      prune: true,
      allowEmpty: false,
    });
  });
});

describe('syncPolicy.retry', () => {
  const withPolicy = (syncPolicy: unknown) => ({ spec: { template: { spec: { syncPolicy } } } });
  const refusal = (retry: unknown): SyncSettingsError => {
    try {
      checkSyncSettingsSpec(withPolicy({ automated: {}, retry }));
    } catch (e) {
      if (e instanceof SyncSettingsError) return e;
      throw e;
    }
    throw new Error('expected the retry policy to be refused');
  };

  it("reads Argo CD's retry, durations as Go durations or plain seconds, defaults for what is left out", () => {
    expect(
      syncPolicyOf({
        automated: { prune: true },
        retry: { limit: 10, backoff: { duration: '10s', factor: 3, maxDuration: '1h30m' } },
      }).retry,
    ).toEqual({ limit: 10, backoff: { durationMs: 10_000, factor: 3, maxDurationMs: 5_400_000 } });
    expect(syncPolicyOf({ automated: {}, retry: { limit: -1, backoff: { duration: '5' } } }).retry).toEqual({
      limit: -1,
      backoff: { durationMs: 5_000, factor: 2, maxDurationMs: 180_000 },
    });
    expect(syncPolicyOf({ automated: {}, retry: { refresh: true } }).retry).toEqual({
      limit: 5,
      backoff: { durationMs: 5_000, factor: 2, maxDurationMs: 180_000 },
    });
    // Without retry the agent uses the contract's default; nothing is stored for it.
    expect(syncPolicyOf({ automated: {} }).retry).toBeUndefined();
    // Every form of syncPolicy carries it: manual (a requested sync's failure) and the flat form.
    expect(syncPolicyOf({ retry: { limit: 1 } }).retry?.limit).toBe(1);
    expect(syncPolicyOf({ selfHeal: true, retry: { limit: 2 } }).retry?.limit).toBe(2);
  });

  it('refuses a bad retry at submission, naming the field', () => {
    expect(refusal({ limit: 'three' })).toMatchObject({
      path: 'spec.template.spec.syncPolicy.retry.limit',
      code: 'invalid-sync-policy',
      message: 'expected a whole number of at least -1, got "three"',
    });
    expect(refusal({ limit: -2 }).path).toBe('spec.template.spec.syncPolicy.retry.limit');
    expect(refusal({ backoff: { duration: '5 minutes' } })).toMatchObject({
      path: 'spec.template.spec.syncPolicy.retry.backoff.duration',
      code: 'invalid-sync-policy',
    });
    expect(refusal({ backoff: { maxDuration: '0s' } }).path).toBe(
      'spec.template.spec.syncPolicy.retry.backoff.maxDuration',
    );
    expect(refusal({ backoff: { factor: 1.5 } }).path).toBe(
      'spec.template.spec.syncPolicy.retry.backoff.factor',
    );
    expect(refusal({ backoff: { jitter: 0.1 } }).path).toBe(
      'spec.template.spec.syncPolicy.retry.backoff.jitter',
    );
    expect(refusal({ limits: 3 }).path).toBe('spec.template.spec.syncPolicy.retry.limits');
    expect(refusal(5).path).toBe('spec.template.spec.syncPolicy.retry');
    expect(refusal({ refresh: false })).toMatchObject({
      path: 'spec.template.spec.syncPolicy.retry.refresh',
      code: 'unsupported-sync-option',
    });
  });

  it('leaves templated retry values to expansion, and refuses them there', () => {
    expect(() =>
      checkSyncSettingsSpec(
        withPolicy({ retry: { limit: '{{.retries}}', backoff: { duration: '{{.d}}' } } }),
      ),
    ).not.toThrow();
    expect(() => targetSyncSettingsOf({ syncPolicy: { retry: { limit: 'x' } } })).toThrow(
      expect.objectContaining({ path: 'spec.template.spec.syncPolicy.retry.limit' }),
    );
  });
});
