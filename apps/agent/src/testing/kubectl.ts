import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The real kubectl against one (simulated) cluster, with its own kubeconfig and discovery cache,
 * for specs that check Flotilla's writes are what kubectl itself reads and writes.
 */
export class Kubectl {
  private readonly dir = mkdtempSync(join(tmpdir(), 'agent-kubectl-'));
  private readonly kubeconfigPath = join(this.dir, 'kubeconfig');

  constructor(kubeconfigYaml: string) {
    writeFileSync(this.kubeconfigPath, kubeconfigYaml);
  }

  /** Exit code, stdout and stderr; `input` goes to stdin (`-f -`). */
  run(args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = execFile(
        'kubectl',
        args,
        {
          env: {
            ...process.env,
            KUBECONFIG: this.kubeconfigPath,
            KUBECACHEDIR: join(this.dir, 'cache'),
            HOME: this.dir,
          },
        },
        (err, stdout, stderr) => {
          const code = err ? (typeof err.code === 'number' ? err.code : undefined) : 0;
          if (code === undefined) reject(err ?? new Error('kubectl did not run'));
          else resolve({ code, stdout, stderr });
        },
      );
      child.stdin?.end(input ?? '');
    });
  }

  /** Runs and fails loudly on a non-zero exit; the output. */
  async ok(args: string[], input?: string): Promise<string> {
    const r = await this.run(args, input);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return r.stdout;
  }

  cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
