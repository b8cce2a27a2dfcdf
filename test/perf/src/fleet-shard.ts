import { join } from 'node:path';
import { parentPort, workerData, Worker } from 'node:worker_threads';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { startAgent, type Agent } from '@flotilla/agent';
import { startSimCluster, type SimClusterHandle } from '@flotilla/kube-sim';
import { AgentCallTrace, type AgentCall } from './fleet-trace.js';

/**
 * A shard of a fleet run: simulated clusters and their agents on a worker thread of their own.
 * In one thread, 100 agents and 100 API servers took turns on one event loop, and the apply phase
 * of a commit (about 6,000 requests) measured that queue rather than Flotilla; in a real fleet every
 * cluster has its own agent and API server. Each agent keeps its own identity, credential, state
 * dir and long-poll.
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

type ToShard = { type: 'trace'; since: number } | { type: 'forget'; before: number } | { type: 'stop' };
type FromShard =
  | { type: 'ready'; clusters: { name: string; kubeconfig: string }[] }
  | { type: 'failed'; message: string }
  | { type: 'trace'; calls: AgentCall[] }
  | { type: 'stopped' };

/** The main thread's handle on one shard. */
export class FleetShard {
  private constructor(
    private readonly worker: Worker,
    /** The shard's clusters, in the order given. */
    readonly clusters: { name: string; kubeconfig: string }[],
  ) {}

  static async start(input: ShardInput): Promise<FleetShard> {
    const worker = new Worker(new URL('./fleet-shard.js', import.meta.url), { workerData: input });
    try {
      const ready = await FleetShard.reply(worker, (m) => m.type === 'ready' || m.type === 'failed');
      if (ready.type === 'failed') throw new Error(`fleet shard: ${ready.message}`);
      if (ready.type !== 'ready') throw new Error('fleet shard: unexpected answer');
      return new FleetShard(worker, ready.clusters);
    } catch (e) {
      await worker.terminate();
      throw e;
    }
  }

  /** The agents' requests to the hub answered since `since` (wall-clock ms). */
  async trace(since: number): Promise<AgentCall[]> {
    const answer = FleetShard.reply(this.worker, (m) => m.type === 'trace');
    this.worker.postMessage({ type: 'trace', since } satisfies ToShard);
    const m = await answer;
    return m.type === 'trace' ? m.calls : [];
  }

  forget(before: number): void {
    this.worker.postMessage({ type: 'forget', before } satisfies ToShard);
  }

  /**
   * Stops the agents and clusters, after which the thread exits by itself; terminated only when
   * that takes longer than 20 s plus 100 ms a cluster. (Terminating a thread whose HTTP servers are
   * still parsing requests aborts the whole process in Node 20: `v8::ToLocalChecked Empty MaybeLocal`
   * under llhttp, which took the hub's teardown with it.)
   */
  async stop(): Promise<void> {
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.postMessage({ type: 'stop' } satisfies ToShard);
    const waitMs = 20_000 + 100 * this.clusters.length;
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([
      exited.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), waitMs))),
    ]);
    clearTimeout(timer);
    if (late) await this.worker.terminate();
  }

  private static reply(worker: Worker, wanted: (m: FromShard) => boolean): Promise<FromShard> {
    return new Promise((resolve, reject) => {
      const onMessage = (m: FromShard): void => {
        if (!wanted(m)) return;
        off();
        resolve(m);
      };
      const onError = (e: Error): void => {
        off();
        reject(e);
      };
      const onExit = (code: number): void => {
        off();
        reject(new Error(`fleet shard exited (${code})`));
      };
      const off = (): void => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
    });
  }
}

/** The worker side: started by `new Worker(...)` with `ShardInput` as its data. */
async function runShard(port: NonNullable<typeof parentPort>, input: ShardInput): Promise<void> {
  const trace = new AgentCallTrace(input.hubUrl);
  const sims: SimClusterHandle[] = [];
  const agents: Agent[] = [];
  const post = (m: FromShard): void => port.postMessage(m);
  const stopAll = async (): Promise<void> => {
    trace.stop();
    await Promise.allSettled(agents.map((a) => a.stop()));
    await Promise.allSettled(sims.map((s) => s.stop()));
  };
  port.on('message', (m: ToShard) => {
    if (m.type === 'trace') post({ type: 'trace', calls: trace.since(m.since) });
    else if (m.type === 'forget') trace.forget(m.before);
    // Stopped: leave the thread from inside (its servers are closed), rather than be terminated.
    else
      void stopAll().finally(() => {
        post({ type: 'stopped' });
        port.close();
        process.exit(0);
      });
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

if (parentPort && (workerData as { hubUrl?: unknown } | null)?.hubUrl) {
  void runShard(parentPort, workerData as ShardInput);
}
