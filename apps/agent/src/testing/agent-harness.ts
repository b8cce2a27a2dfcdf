import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi, PatchStrategy } from '@kubernetes/client-node';
import { pino } from 'pino';
import { parse } from 'yaml';
import { type KubeObject } from '@flotilla/contract';
import { type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { type Agent, type AgentOptions, startAgent } from '../agent.js';
import { type AssignmentInput, HubStandIn } from './hub-stand-in.js';

export const pollOptions = { timeout: 15_000, interval: 50 };

export function loadFixture(name: string): KubeObject[] {
  return parse(readFileSync(new URL(`../testdata/${name}`, import.meta.url), 'utf8')) as KubeObject[];
}

/**
 * One simulated cluster (real HTTP), one stand-in hub and a temp dir, plus the calls a test makes:
 * run an agent in-process, read objects back and change them out of band as a person would.
 */
export class AgentHarness {
  readonly agents: Agent[] = [];
  private constructor(
    readonly sim: SimClusterHandle,
    readonly hub: HubStandIn,
    readonly kc: KubeConfig,
    readonly k8s: KubernetesObjectApi,
    readonly dir: string,
  ) {}

  static async start(clusterName = 'east'): Promise<AgentHarness> {
    const sim = await startSimCluster({ name: clusterName });
    const hub = new HubStandIn();
    await hub.start();
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    const dir = await mkdtemp(join(tmpdir(), 'agent-it-'));
    return new AgentHarness(sim, hub, kc, KubernetesObjectApi.makeApiClient(kc), dir);
  }

  async stop(): Promise<void> {
    await Promise.all(this.agents.map((a) => a.stop()));
    await this.hub.stop();
    await this.sim.stop();
    await rm(this.dir, { recursive: true, force: true });
  }

  async runAgent(
    options: {
      stateDir?: string;
      hubUrl?: string;
      ageKey?: string;
      statusPort?: number;
      waveTimeoutSeconds?: number;
      /** A namespace-scoped agent (FLOTILLA_NAMESPACES). */
      namespaces?: string[];
      /** Writes as each project's ServiceAccount in this namespace (FLOTILLA_IMPERSONATE_NAMESPACE). */
      impersonateNamespace?: string;
    } & AgentOptions = {},
  ): Promise<Agent> {
    const {
      stateDir,
      hubUrl,
      ageKey,
      statusPort,
      waveTimeoutSeconds,
      namespaces,
      impersonateNamespace,
      ...extra
    } = options;
    const agent = await startAgent(
      {
        hubUrl: hubUrl ?? this.hub.url,
        clusterName: this.sim.name,
        bootstrapToken: this.hub.bootstrapToken,
        stateDir: stateDir ?? join(this.dir, 'state'),
        resyncSeconds: 3600,
        logLevel: 'silent',
        ...(ageKey ? { ageKey } : {}),
        ...(statusPort !== undefined ? { statusPort, statusHost: '127.0.0.1' } : {}),
        ...(waveTimeoutSeconds !== undefined ? { waveTimeoutSeconds } : {}),
        ...(namespaces !== undefined ? { namespaces } : {}),
        ...(impersonateNamespace !== undefined ? { impersonateNamespace } : {}),
      },
      {
        logger: pino({ level: process.env['AGENT_TEST_LOG'] ?? 'silent' }),
        kubeConfig: this.kc,
        longPollSeconds: 2,
        hubBackoff: { initialMs: 50, maxMs: 300 },
        selfHealBackoff: { initialMs: 50, maxMs: 1_000 },
        ...extra,
      },
    );
    this.agents.push(agent);
    return agent;
  }

  assignment(over: Partial<AssignmentInput> & { bundleDigest: string }): AssignmentInput {
    return {
      targetId: 'target-web',
      name: 'web-east',
      appSet: 'web',
      namespace: 'shop',
      revision: 'rev-1',
      syncPolicy: { automated: true, selfHeal: true, prune: true },
      ...over,
    };
  }

  async read(kind: string, name: string, namespace = 'shop'): Promise<KubeObject | undefined> {
    try {
      const obj = await this.k8s.read({
        apiVersion: apiVersionOf(kind),
        kind,
        metadata: { name, namespace },
      });
      return JSON.parse(JSON.stringify(obj)) as KubeObject;
    } catch {
      return undefined;
    }
  }

  async replicas(name = 'web'): Promise<unknown> {
    const live = (await this.read('Deployment', name)) as { spec?: { replicas?: number } } | undefined;
    return live?.spec?.replicas;
  }

  /** An out-of-band merge patch over HTTP, as `kubectl edit` would make it. */
  async edit(
    kind: string,
    name: string,
    patch: Record<string, unknown>,
    manager = 'kubectl-edit',
  ): Promise<void> {
    await this.k8s.patch(
      {
        ...patch,
        apiVersion: apiVersionOf(kind),
        kind,
        metadata: { ...(patch['metadata'] as object | undefined), name, namespace: 'shop' },
      },
      undefined,
      undefined,
      manager,
      undefined,
      PatchStrategy.MergePatch,
    );
  }

  async remove(kind: string, name: string): Promise<void> {
    await this.k8s.delete({ apiVersion: apiVersionOf(kind), kind, metadata: { name, namespace: 'shop' } });
  }

  syncs() {
    return this.hub.reportsOf('sync');
  }

  drifts(state: 'detected' | 'healed' | 'contested' | 'tolerated') {
    return this.hub.reportsOf('drift').filter((d) => d.state === state);
  }
}

function apiVersionOf(kind: string): string {
  return kind === 'Deployment' ? 'apps/v1' : 'v1';
}
