import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real kubectl against one simulated cluster, with its own kubeconfig and a fresh
 * discovery cache (kubectl caches discovery per host:port for hours).
 */
export class Kubectl {
  readonly dir: string;
  readonly kubeconfig: string;

  constructor(kubeconfigYaml: string) {
    this.dir = mkdtempSync(join(tmpdir(), 'kube-sim-kubectl-'));
    this.kubeconfig = join(this.dir, 'kubeconfig');
    writeFileSync(this.kubeconfig, kubeconfigYaml);
  }

  run(args: string[], opts: { input?: string; env?: Record<string, string> } = {}): Promise<KubectlResult> {
    return new Promise((resolve, reject) => {
      const child = spawn('kubectl', args, {
        env: {
          ...process.env,
          KUBECONFIG: this.kubeconfig,
          KUBECACHEDIR: join(this.dir, 'cache'),
          HOME: this.dir,
          ...opts.env,
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
      child.stdin.end(opts.input ?? '');
    });
  }

  /** Starts a long-running kubectl (e.g. `get -w`); resolves `waitFor` once stdout matches. */
  start(args: string[]): {
    output: () => string;
    waitFor: (re: RegExp, ms?: number) => Promise<string>;
    stop: () => void;
  } {
    const child = spawn('kubectl', args, {
      env: {
        ...process.env,
        KUBECONFIG: this.kubeconfig,
        KUBECACHEDIR: join(this.dir, 'cache'),
        HOME: this.dir,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    const waiters: (() => void)[] = [];
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      for (const w of [...waiters]) w();
    });
    return {
      output: () => stdout,
      waitFor: (re, ms = 10_000) =>
        new Promise((resolve, reject) => {
          const check = (): void => {
            if (re.test(stdout)) {
              clearTimeout(timer);
              resolve(stdout);
            }
          };
          const timer = setTimeout(
            () => reject(new Error(`kubectl ${args.join(' ')}: no ${String(re)} in ${stdout}`)),
            ms,
          );
          waiters.push(check);
          check();
        }),
      stop: () => {
        if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, 'SIGTERM');
      },
    };
  }

  /** Runs and fails loudly on a non-zero exit. */
  async ok(args: string[], opts: { input?: string; env?: Record<string, string> } = {}): Promise<string> {
    const r = await this.run(args, opts);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return r.stdout;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async json<T = Record<string, any>>(args: string[]): Promise<T> {
    return JSON.parse(await this.ok([...args, '-o', 'json'])) as T;
  }

  /** Writes a file into the temp dir (manifests, editor scripts) and returns its path. */
  file(name: string, content: string, mode?: number): string {
    const p = join(this.dir, name);
    writeFileSync(p, content, mode === undefined ? undefined : { mode });
    return p;
  }

  cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
