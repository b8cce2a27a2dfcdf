import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentConfigError, loadAgentConfig, projectServiceAccount } from './agent-config.js';

const minimal = { FLOTILLA_HUB_URL: 'https://hub.example.com/', FLOTILLA_CLUSTER_NAME: 'east-1' };

function issues(env: Record<string, string | undefined>): { variable: string; message: string }[] {
  try {
    loadAgentConfig(env);
  } catch (err) {
    if (err instanceof AgentConfigError) return err.issues;
    throw err;
  }
  return [];
}

describe('loadAgentConfig', () => {
  it('fills defaults from the cluster name', () => {
    expect(loadAgentConfig(minimal)).toEqual({
      hubUrl: 'https://hub.example.com',
      clusterName: 'east-1',
      stateDir: resolve('.flotilla-agent/east-1'),
      resyncSeconds: 180,
      waveTimeoutSeconds: 300,
      logLevel: 'info',
    });
  });

  it('takes every variable, treating empty ones as unset', () => {
    const config = loadAgentConfig({
      ...minimal,
      FLOTILLA_BOOTSTRAP_TOKEN: 'boot',
      KUBECONFIG: '/etc/kube/config',
      FLOTILLA_STATE_DIR: '/var/lib/flotilla',
      FLOTILLA_RESYNC_SECONDS: '60',
      FLOTILLA_WAVE_TIMEOUT_SECONDS: '45',
      FLOTILLA_STATUS_PORT: '8080',
      FLOTILLA_LOG_LEVEL: '',
    });
    expect(config).toEqual({
      hubUrl: 'https://hub.example.com',
      clusterName: 'east-1',
      bootstrapToken: 'boot',
      kubeconfigPath: '/etc/kube/config',
      stateDir: '/var/lib/flotilla',
      resyncSeconds: 60,
      waveTimeoutSeconds: 45,
      logLevel: 'info',
      statusPort: 8080,
      statusHost: '0.0.0.0',
    });
  });

  it('serves status only when FLOTILLA_STATUS_PORT is set, on the host FLOTILLA_STATUS_HOST names', () => {
    expect(loadAgentConfig({ ...minimal, FLOTILLA_STATUS_HOST: '127.0.0.1' }).statusPort).toBeUndefined();
    expect(
      loadAgentConfig({ ...minimal, FLOTILLA_STATUS_PORT: '0', FLOTILLA_STATUS_HOST: '127.0.0.1' }),
    ).toMatchObject({ statusPort: 0, statusHost: '127.0.0.1' });
    expect(issues({ ...minimal, FLOTILLA_STATUS_PORT: '70000' })).toEqual([
      { variable: 'FLOTILLA_STATUS_PORT', message: 'must be a TCP port number (0 to 65535)' },
    ]);
    expect(issues({ ...minimal, FLOTILLA_STATUS_PORT: 'http' })).toEqual([
      { variable: 'FLOTILLA_STATUS_PORT', message: 'must be a TCP port number' },
    ]);
  });

  it('limits the agent to the namespaces FLOTILLA_NAMESPACES lists, and refuses names that are not namespaces', () => {
    expect(loadAgentConfig(minimal).namespaces).toBeUndefined();
    expect(loadAgentConfig({ ...minimal, FLOTILLA_NAMESPACES: '' }).namespaces).toBeUndefined();
    expect(loadAgentConfig({ ...minimal, FLOTILLA_NAMESPACES: 'shop, web,shop' }).namespaces).toEqual([
      'shop',
      'web',
    ]);
    expect(issues({ ...minimal, FLOTILLA_NAMESPACES: 'shop,Web_1' })).toEqual([
      {
        variable: 'FLOTILLA_NAMESPACES',
        message:
          'must be a comma-separated list of namespace names (DNS labels: lower-case letters, digits, "-")',
      },
    ]);
  });

  it("writes as the projects' ServiceAccounts in the namespace FLOTILLA_IMPERSONATE_NAMESPACE names", () => {
    expect(loadAgentConfig(minimal).impersonateNamespace).toBeUndefined();
    expect(
      loadAgentConfig({ ...minimal, FLOTILLA_IMPERSONATE_NAMESPACE: 'flotilla-system' }).impersonateNamespace,
    ).toBe('flotilla-system');
    expect(projectServiceAccount('flotilla-system', 'shop-team')).toBe(
      'system:serviceaccount:flotilla-system:flotilla-project-shop-team',
    );
    expect(issues({ ...minimal, FLOTILLA_IMPERSONATE_NAMESPACE: 'Flotilla' })).toEqual([
      {
        variable: 'FLOTILLA_IMPERSONATE_NAMESPACE',
        message:
          'must be a namespace name (a DNS label): where the flotilla-project-<project> ServiceAccounts live',
      },
    ]);
  });

  it('names each wrong variable with the reason', () => {
    expect(
      issues({
        FLOTILLA_HUB_URL: 'hub:8080',
        FLOTILLA_CLUSTER_NAME: 'East_1',
        FLOTILLA_RESYNC_SECONDS: '1',
        FLOTILLA_WAVE_TIMEOUT_SECONDS: '0',
        FLOTILLA_LOG_LEVEL: 'loud',
      }),
    ).toEqual([
      { variable: 'FLOTILLA_HUB_URL', message: 'must be an http(s) URL such as https://hub.example.com' },
      {
        variable: 'FLOTILLA_CLUSTER_NAME',
        message: 'must be a DNS-style name: lower-case letters, digits, "-" and "."',
      },
      { variable: 'FLOTILLA_RESYNC_SECONDS', message: 'must be at least 5 seconds' },
      { variable: 'FLOTILLA_WAVE_TIMEOUT_SECONDS', message: 'must be at least 1 second' },
      {
        variable: 'FLOTILLA_LOG_LEVEL',
        message: 'must be one of fatal, error, warn, info, debug, trace, silent',
      },
    ]);
    expect(issues({}).map((i) => i.variable)).toEqual(['FLOTILLA_HUB_URL', 'FLOTILLA_CLUSTER_NAME']);
  });
});
