import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Runs git in `dir` as a fixed author (so commits do not depend on who runs the tests); its stdout, trimmed. */
export function gitIn(dir: string, ...args: string[]): string {
  const r = spawnSync('git', ['-C', dir, ...args], {
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'Plan Test',
      GIT_AUTHOR_EMAIL: 'plan@example.com',
      GIT_COMMITTER_NAME: 'Plan Test',
      GIT_COMMITTER_EMAIL: 'plan@example.com',
    },
  });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

/** Writes each file (path relative to `dir`), making its folders. */
export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    const full = join(dir, path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, text);
  }
}
