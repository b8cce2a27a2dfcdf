import { describe, expect, it } from 'vitest';
import { AGENT_FEATURES, missingAgentFeature, parseAgentFeatures } from './agent-features.js';

describe('agent features', () => {
  it('reads the header: known names only, sorted as declared, each once; absent is none', () => {
    expect(parseAgentFeatures(undefined)).toEqual([]);
    expect(parseAgentFeatures('')).toEqual([]);
    expect(parseAgentFeatures(' terminate, dry-run,teleport,dry-run')).toEqual(['dry-run', 'terminate']);
    expect(parseAgentFeatures(AGENT_FEATURES.join(','))).toEqual([...AGENT_FEATURES]);
  });

  it('names the first feature a run needs that the agent lacks, with the field, the version and what to do', () => {
    const old = { cluster: 'eu-1', version: '0.0.9', features: [] };
    expect(missingAgentFeature(old, {})).toBeNull();
    expect(missingAgentFeature(old, { dryRun: false, syncOptions: [], resources: [] })).toBeNull();
    expect(missingAgentFeature(old, { dryRun: true, force: true })).toEqual({
      feature: 'dry-run',
      field: 'dryRun',
      message:
        'the agent of cluster "eu-1" (version 0.0.9) has not announced support for "dry-run": upgrade the agent, or ask without dryRun',
    });
    const some = { cluster: 'eu-1', version: null, features: ['dry-run', 'run-revision'] };
    expect(missingAgentFeature(some, { dryRun: true, revision: 'abc1234' })).toBeNull();
    expect(missingAgentFeature(some, { revision: 'abc1234', syncOptions: ['Replace=true'] })).toMatchObject({
      feature: 'run-sync-options',
      field: 'syncOptions',
    });
    expect(missingAgentFeature(some, { resources: [{}] })?.message).toContain('(version unknown)');
    expect(missingAgentFeature(some, { force: true })?.feature).toBe('run-force');
    expect(missingAgentFeature(some, { terminate: true })).toMatchObject({
      feature: 'terminate',
      field: 'operation',
    });
    expect(missingAgentFeature({ ...some, features: ['terminate'] }, { terminate: true })).toBeNull();
  });
});
