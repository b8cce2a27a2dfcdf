import { fork, type ChildProcess } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { fileURLToPath } from 'node:url';
import { cpuProfileArgs } from './cpu-profile.js';
import { shardReply } from './shard-process.js';
import { type Report } from '@flotilla/contract';
import { SwarmClient, type RevisionTimes } from './swarm-client.js';

/**
 * A shard of the protocol-level swarm: many SwarmClients (one per cluster, each with its own
 * credential, ETag, bundles and report queue) in a Node process of its own, so that the bench can
 * pin the swarm to one core and the hub to the other and measure each side's CPU.
 */
interface ShardInput {
  hubUrl: string;
  clusters: { name: string; bootstrapToken: string }[];
  /** Clients registering at once (each registration is a hub transaction with an audit event). */
  startInFlight: number;
}

/** Per revision, each client's times (absent: not reached yet); clients in input order. */
export type ShardProgress = Record<string, RevisionTimes[]>;

type ToShard =
  | { type: 'start'; input: ShardInput }
  | { type: 'progress'; revisions: string[] }
  | { type: 'burst'; rounds: number }
  | { type: 'floor'; url: string }
  | { type: 'calls' }
  | { type: 'stop' };
export interface BurstResult {
  /** Per round: reports sent, accepted, duplicates, and the wall-clock span of the round (ms). */
  rounds: {
    sent: number;
    accepted: number;
    duplicates: number;
    storedBeforeRetry: number;
    startedAt: number;
    endedAt: number;
  }[];
  /** The first round posted again with the same ids. */
  replay: { sent: number; accepted: number; duplicates: number };
  /** POSTs the hub failed (5xx, no answer), each sent again. */
  failedPosts: number;
}
type FromShard =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  | { type: 'progress'; progress: ShardProgress }
  | { type: 'burst'; result: BurstResult }
  | { type: 'floor'; answeredAt: number[] }
  | { type: 'calls'; calls: Record<string, number> };

/** The bench's handle on one swarm shard process. */
export class SwarmShard {
  private constructor(
    private readonly child: ChildProcess,
    readonly size: number,
  ) {}

  get pid(): number {
    return this.child.pid ?? 0;
  }

  /** Forks the shard; `onForked` runs before any client starts (to pin the process to a core). */
  static async start(input: ShardInput, onForked: (pid: number) => void): Promise<SwarmShard> {
    const child = fork(fileURLToPath(new URL('./swarm-shard.js', import.meta.url)), [], {
      env: { ...process.env, FLOTILLA_SWARM_SHARD: '1' },
      execArgv: cpuProfileArgs(),
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    try {
      if (child.pid) onForked(child.pid);
      const m = await SwarmShard.ask(
        child,
        { type: 'start', input },
        (x) => x.type === 'ready' || x.type === 'failed',
      );
      if (m.type === 'failed') throw new Error(`swarm shard: ${m.message}`);
      return new SwarmShard(child, input.clusters.length);
    } catch (e) {
      child.kill('SIGKILL');
      throw e;
    }
  }

  async progress(revisions: string[]): Promise<ShardProgress> {
    const m = await SwarmShard.ask(this.child, { type: 'progress', revisions }, (x) => x.type === 'progress');
    return m.type === 'progress' ? m.progress : {};
  }

  async burst(rounds: number): Promise<BurstResult> {
    const m = await SwarmShard.ask(this.child, { type: 'burst', rounds }, (x) => x.type === 'burst');
    if (m.type !== 'burst') throw new Error('swarm shard: unexpected answer');
    return m.result;
  }

  /** Every client holds a GET on `url` (the bare long-poll server); resolves with their answer times. */
  async floor(url: string): Promise<number[]> {
    const m = await SwarmShard.ask(this.child, { type: 'floor', url }, (x) => x.type === 'floor');
    return m.type === 'floor' ? m.answeredAt : [];
  }

  async calls(): Promise<Record<string, number>> {
    const m = await SwarmShard.ask(this.child, { type: 'calls' }, (x) => x.type === 'calls');
    return m.type === 'calls' ? m.calls : {};
  }

  /** Asks the shard to stop its clients and exit; killed by PID after 10 s. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    if (this.child.connected) this.child.send({ type: 'stop' } satisfies ToShard);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }

  private static ask(
    child: ChildProcess,
    message: ToShard,
    wanted: (m: FromShard) => boolean,
  ): Promise<FromShard> {
    const reply = shardReply(child, 'swarm', wanted);
    child.send(message);
    return reply;
  }
}

/** The shard side: a process forked by `SwarmShard.start`. */
function runShard(): void {
  const abort = new AbortController();
  // Every client's calls listen on the one signal that stops the shard: thousands at once, by design.
  setMaxListeners(0, abort.signal);
  const clients: SwarmClient[] = [];
  const loops: Promise<void>[] = [];
  const post = (m: FromShard): void => void process.send?.(m);
  process.on('message', (m: ToShard) => {
    switch (m.type) {
      case 'start':
        void start(m.input).then(
          () => post({ type: 'ready' }),
          (e: Error) => post({ type: 'failed', message: e.message }),
        );
        break;
      case 'progress':
        post({
          type: 'progress',
          progress: Object.fromEntries(m.revisions.map((r) => [r, clients.map((c) => c.times.get(r) ?? {})])),
        });
        break;
      case 'burst':
        void burst(clients, m.rounds).then((result) => post({ type: 'burst', result }));
        break;
      case 'floor':
        void Promise.all(
          clients.map(async () => {
            try {
              await (await fetch(m.url, { signal: abort.signal })).arrayBuffer();
              return Date.now();
            } catch {
              return NaN;
            }
          }),
        ).then((answeredAt) => post({ type: 'floor', answeredAt }));
        break;
      case 'calls': {
        const calls: Record<string, number> = {};
        for (const c of clients) for (const [k, n] of c.calls) calls[k] = (calls[k] ?? 0) + n;
        post({ type: 'calls', calls });
        break;
      }
      case 'stop':
        abort.abort();
        void Promise.allSettled(loops).finally(() => process.exit(0));
        break;
    }
  });

  async function start(input: ShardInput): Promise<void> {
    for (let i = 0; i < input.clusters.length; i += input.startInFlight) {
      await Promise.all(
        input.clusters.slice(i, i + input.startInFlight).map(async ({ name, bootstrapToken }) => {
          const client = new SwarmClient(input.hubUrl, name, abort.signal);
          await client.start(bootstrapToken);
          clients.push(client);
          loops.push(client.run());
        }),
      );
    }
  }
}

/**
 * Report ingest at capacity: every client posts, at the same moment, a sync and a health report
 * per target (fresh ids, trigger `self-heal` at the revision it holds) `rounds` times, one round
 * after another; then the first round again, which the hub must count as duplicates only.
 */
async function burst(clients: SwarmClient[], rounds: number): Promise<BurstResult> {
  const batches = (): ReturnType<SwarmClient['reportsFor']>[] =>
    clients.map((c) => {
      const at = new Date().toISOString();
      return c.assignments.flatMap((a) => c.reportsFor(a, at, 'self-heal'));
    });
  // A failed POST is sent again unchanged, as the agent's queue does: the same ids, so a batch the
  // hub stored before failing comes back as duplicates, never twice.
  let failures = 0;
  const postUntilAnswered = async (c: SwarmClient, reports: Report[]) => {
    for (let attempt = 1; ; attempt++) {
      try {
        const a = await c.postReports(reports);
        return { ...a, retried: attempt > 1 };
      } catch (err) {
        failures++;
        if (attempt >= 5) throw err;
        await new Promise((resolve) => setTimeout(resolve, 1_000 * attempt));
      }
    }
  };
  const post = async (all: ReturnType<typeof batches>) => {
    const answers = await Promise.all(clients.map((c, i) => postUntilAnswered(c, all[i] ?? [])));
    return {
      sent: all.reduce((n, b) => n + b.length, 0),
      accepted: answers.reduce((n, a) => n + a.accepted, 0),
      duplicates: answers.reduce((n, a) => n + a.duplicates, 0),
      // Duplicates in an answer to a resent batch are its first attempt, stored before it failed.
      storedBeforeRetry: answers.reduce((n, a) => n + (a.retried ? a.duplicates : 0), 0),
    };
  };
  const out: BurstResult = { rounds: [], replay: { sent: 0, accepted: 0, duplicates: 0 }, failedPosts: 0 };
  let first: ReturnType<typeof batches> = [];
  for (let r = 0; r < rounds; r++) {
    const all = batches();
    if (r === 0) first = all;
    const startedAt = Date.now();
    const counts = await post(all);
    out.rounds.push({ ...counts, startedAt, endedAt: Date.now() });
  }
  const replay = await post(first);
  out.replay = { sent: replay.sent, accepted: replay.accepted, duplicates: replay.duplicates };
  out.failedPosts = failures;
  return out;
}

if (process.env['FLOTILLA_SWARM_SHARD'] === '1' && process.send) {
  // A bench that goes away takes its shards with it.
  process.on('disconnect', () => process.exit(1));
  runShard();
}
