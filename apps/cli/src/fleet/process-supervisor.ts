import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';

export interface SupervisedProcess {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** Resolves with the exit code (or the signal's name) when the process ends. */
  readonly exited: Promise<number | string>;
}

export interface SpawnOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Where stdout and stderr go; by default they are discarded. */
  logFile?: string;
  /** Called with each stdout line, e.g. to wait for a readiness line. */
  onLine?: (line: string) => void;
}

/** Every child any supervisor started and that still runs. */
const liveChildren = new Set<ChildProcess>();
// Whatever way this process ends (a crash included), its children must not outlive it.
process.once('exit', () => {
  for (const child of liveChildren) child.kill('SIGKILL');
});

/**
 * Starts child processes and guarantees they are gone afterwards: `stopAll` sends SIGTERM, then
 * SIGKILL to whatever is still alive after a grace period, by PID. The demo, the end-to-end tests
 * and the benchmarks all start their hubs, agents and servers through one of these.
 */
export class ProcessSupervisor {
  private readonly processes: SupervisedProcess[] = [];
  private readonly logs: WriteStream[] = [];

  spawn(name: string, command: string, args: string[], opts: SpawnOptions = {}): SupervisedProcess {
    const child = spawn(command, args, {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (child.pid === undefined) throw new Error(`could not start ${name} (${command})`);
    const log = opts.logFile ? createWriteStream(opts.logFile, { flags: 'a' }) : undefined;
    if (log) this.logs.push(log);
    let pending = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      log?.write(chunk);
      if (!opts.onLine) return;
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) opts.onLine(line);
    });
    child.stderr?.on('data', (chunk: Buffer) => log?.write(chunk));
    liveChildren.add(child);
    child.once('exit', () => liveChildren.delete(child));
    const exited = once(child, 'exit').then(
      ([code, signal]) => (code ?? (signal as string)) as number | string,
    );
    const proc: SupervisedProcess = { name, pid: child.pid, child, exited };
    this.processes.push(proc);
    return proc;
  }

  /** Stops one process: SIGTERM, then SIGKILL after `graceMs`. */
  async stop(proc: SupervisedProcess, graceMs = 5_000): Promise<void> {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
    proc.child.kill('SIGTERM');
    const timer = setTimeout(() => proc.child.kill('SIGKILL'), graceMs);
    await proc.exited;
    clearTimeout(timer);
  }

  /** Kills one process at once (SIGKILL), as a crash would. */
  async kill(proc: SupervisedProcess): Promise<void> {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
    proc.child.kill('SIGKILL');
    await proc.exited;
  }

  async stopAll(graceMs = 5_000): Promise<void> {
    await Promise.all([...this.processes].reverse().map((p) => this.stop(p, graceMs)));
    await Promise.all(this.logs.map((l) => new Promise<void>((resolve) => l.end(resolve))));
    this.logs.length = 0;
  }

  get running(): SupervisedProcess[] {
    return this.processes.filter((p) => p.child.exitCode === null && p.child.signalCode === null);
  }
}
