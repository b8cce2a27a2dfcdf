import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { startAgent, type Agent } from '@flotilla/agent';
import { startSimCluster, type SimClusterHandle } from '@flotilla/kube-sim';
import { cpuProfileArgs } from './cpu-profile.js';
import { shardReply } from './shard-process.js';
import { AgentCallTrace, type AgentCall } from './fleet-trace.js';

/**
 * A shard of a fleet run: simulated clusters and their agents in a Node process of their own (up to
 * 250 clusters at 1,000). In one event loop, 100 agents and 100 API servers took turns, and the apply
 * phase of a commit (about 6,000 requests) measured that queue rather than Flotilla; in a real fleet
 * every cluster has its own agent and API server. Processes rather than worker threads: each agent's
 * connections and each simulated API server's sockets are file descriptors at both ends, and 1,000
 * clusters in one process ran out of its 20,000 (EMFILE) during a cold rollout. Each agent keeps its
 * own identity, credential, state dir and long-poll.
 */
interface ShardInput {
  hubUrl: string;
  workDir: string;
  clusters: { name: string; bootstrapToken: string }[];
  /**
   * Cluster + agent pairs started at once (default 10). Each agent registers with the hub on start
   * (a transaction with an audit event): the shards of a 1,000-cluster run keep the fleet-wide sum
   * bounded, as a rollout of agents would be, rather than have every agent register in the same second.
   */
  startInFlight?: number;
}

type ToShard =
  | { type: 'start'; input: ShardInput }
  | { type: 'trace'; since: number }
  | { type: 'forget'; before: number }
  | { type: 'stop' };
type FromShard =
  | { type: 'ready'; clusters: { name: string; kubeconfig: string }[] }
  | { type: 'failed'; message: string }
  | { type: 'trace'; calls: AgentCall[] };

/** The bench's handle on one shard process. */
export class FleetShard {
  private constructor(
    private readonly child: ChildProcess,
    /** The shard's clusters, in the order given. */
    readonly clusters: { name: string; kubeconfig: string }[],
  ) {}

  /** The shard process, for its RSS. */
  get pid(): number {
    return this.child.pid ?? 0;
  }

  static async start(input: ShardInput): Promise<FleetShard> {
    const child = fork(fileURLToPath(new URL('./fleet-shard.js', import.meta.url)), [], {
      env: { ...process.env, FLOTILLA_FLEET_SHARD: '1' },
      execArgv: cpuProfileArgs(),
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    try {
      const ready = FleetShard.reply(child, (m) => m.type === 'ready' || m.type === 'failed');
      child.send({ type: 'start', input } satisfies ToShard);
      const m = await ready;
      if (m.type === 'failed') throw new Error(`fleet shard: ${m.message}`);
      if (m.type !== 'ready') throw new Error('fleet shard: unexpected answer');
      return new FleetShard(child, m.clusters);
    } catch (e) {
      child.kill('SIGKILL');
      throw e;
    }
  }

  /** The agents' requests to the hub answered since `since` (wall-clock ms). */
  async trace(since: number): Promise<AgentCall[]> {
    const answer = FleetShard.reply(this.child, (m) => m.type === 'trace');
    this.child.send({ type: 'trace', since } satisfies ToShard);
    const m = await answer;
    return m.type === 'trace' ? m.calls : [];
  }

  forget(before: number): void {
    this.child.send({ type: 'forget', before } satisfies ToShard);
  }

  /**
   * Stops the agents and clusters, after which the process exits by itself; killed when that takes
   * longer than 20 s plus 100 ms a cluster.
   */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    if (this.child.connected) this.child.send({ type: 'stop' } satisfies ToShard);
    const waitMs = 20_000 + 100 * this.clusters.length;
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([
      exited.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), waitMs))),
    ]);
    clearTimeout(timer);
    if (late) {
      this.child.kill('SIGKILL');
      await exited;
    }
  }

  private static reply(child: ChildProcess, wanted: (m: FromShard) => boolean): Promise<FromShard> {
    return shardReply(child, 'fleet', wanted);
  }
}

/** The shard side: a process forked by `FleetShard.start`, given its `ShardInput` by message. */
async function runShard(input: ShardInput): Promise<void> {
  const trace = new AgentCallTrace(input.hubUrl);
  const sims: SimClusterHandle[] = [];
  const agents: Agent[] = [];
  const post = (m: FromShard): void => void process.send?.(m);
  const stopAll = async (): Promise<void> => {
    trace.stop();
    await Promise.allSettled(agents.map((a) => a.stop()));
    await Promise.allSettled(sims.map((s) => s.stop()));
  };
  process.on('message', (m: ToShard) => {
    if (m.type === 'trace') post({ type: 'trace', calls: trace.since(m.since) });
    else if (m.type === 'forget') trace.forget(m.before);
    else if (m.type === 'stop') void stopAll().finally(() => process.exit(0));
  });
  try {
    const inFlight = Math.max(1, input.startInFlight ?? 10);
    for (let i = 0; i < input.clusters.length; i += inFlight) {
      await Promise.all(
        input.clusters.slice(i, i + inFlight).map(async ({ name, bootstrapToken }) => {
          const sim = await startSimCluster({ name, kubeconfigDir: join(input.workDir, 'kube') });
          sims.push(sim);
          const kc = new KubeConfig();
          kc.loadFromString(sim.kubeconfig());
          agents.push(
            await startAgent(
              {
                hubUrl: input.hubUrl,
                clusterName: name,
                bootstrapToken,
                stateDir: join(input.workDir, 'agents', name),
                resyncSeconds: 3600,
                logLevel: 'silent',
              },
              { logger: pino({ level: 'silent' }), kubeConfig: kc },
            ),
          );
        }),
      );
    }
    const byName = new Map(sims.map((s) => [s.name, s]));
    post({
      type: 'ready',
      clusters: input.clusters.map(({ name }) => ({
        name,
        kubeconfig: byName.get(name)?.kubeconfig() ?? '',
      })),
    });
  } catch (e) {
    await stopAll();
    post({ type: 'failed', message: (e as Error).message });
  }
}

if (process.env['FLOTILLA_FLEET_SHARD'] === '1' && process.send) {
  // A bench that goes away (killed, crashed) takes its shards with it.
  process.on('disconnect', () => process.exit(1));
  process.once('message', (m: ToShard) => {
    if (m.type === 'start') void runShard(m.input);
  });
}
