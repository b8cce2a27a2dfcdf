import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestGitRepo, type TestGitRepo } from '../../testing/test-git-repo.js';
import { GitMirrorError, GitMirrors } from './git-mirror.js';

// Issues #16 item 7 and #15 item 12: a fetch is stopped for silence, not for length. A git:// URL
// whose server accepts and says nothing frees its worker after the connect timeout with a reason
// that names it; one that answers garbage fails at once; a real daemon fetches under the same limits.

function listen(onSocket: (s: Socket) => void): Promise<{ server: Server; port: number; sockets: Socket[] }> {
  const sockets: Socket[] = [];
  const server = createServer((s) => {
    sockets.push(s);
    s.on('error', () => undefined);
    onSocket(s);
  });
  return new Promise((done) =>
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      done({ server, port: typeof address === 'object' && address ? address.port : 0, sockets });
    }),
  );
}

async function refusal(fetching: Promise<void>): Promise<GitMirrorError> {
  const outcome = await fetching.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(outcome instanceof GitMirrorError))
    throw new Error(`expected a GitMirrorError, got ${String(outcome)}`);
  return outcome;
}

async function freePort(): Promise<number> {
  const { server, port } = await listen(() => undefined);
  await new Promise((done) => server.close(done));
  return port;
}

describe('Git fetch timeouts', () => {
  let dataDir: string;
  let repo: TestGitRepo;
  let daemon: ChildProcess;
  let daemonPort: number;
  const servers: { server: Server; sockets: Socket[] }[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'flotilla-mirrors-'));
    repo = createTestGitRepo({ 'apps/web/a.yaml': 'a: 1\n' });
    writeFileSync(join(repo.dir, '.git', 'git-daemon-export-ok'), '');
    daemonPort = await freePort();
    daemon = spawn(
      'git',
      [
        'daemon',
        '--listen=127.0.0.1',
        `--port=${daemonPort}`,
        `--base-path=${dirname(repo.dir)}`,
        '--reuseaddr',
        dirname(repo.dir),
      ],
      { stdio: 'ignore' },
    );
  });
  afterAll(async () => {
    daemon?.kill('SIGTERM');
    for (const { server, sockets } of servers) {
      for (const s of sockets) s.destroy();
      await new Promise((done) => server.close(done));
    }
    repo.remove();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('stops a git:// fetch from a server that accepts and says nothing, saying why', async () => {
    const silent = await listen(() => undefined);
    servers.push(silent);
    const mirrors = new GitMirrors(dataDir, { connectMs: 1_000, idleMs: 60_000, maxMs: 600_000 });
    const url = `git://127.0.0.1:${silent.port}/repo.git`;
    const error = await refusal(mirrors.fetch('silent', url));
    expect(error.code).toBe('fetch-failed');
    expect(error.message).toMatch(
      /^cannot fetch git:\/\/127\.0\.0\.1:\d+\/repo\.git: .*the remote sent nothing within 1 s \(GIT_CONNECT_TIMEOUT_SECONDS\)/,
    );
    // The server did accept: the fetch was stopped by the hub, not refused by the network.
    expect(silent.sockets.length).toBeGreaterThan(0);
    expect(mirrors.hasMirror('silent')).toBe(false);
  }, 60_000);

  it('fails a git:// fetch from a server that answers garbage without waiting for a timeout', async () => {
    const garbage = await listen((s) => s.end('HTTP/1.1 400 Bad Request\r\n\r\nthis is not git\n'));
    servers.push(garbage);
    // Timeouts far beyond the test's own: only git's protocol error can end this fetch in time.
    const mirrors = new GitMirrors(dataDir, { connectMs: 600_000, idleMs: 600_000, maxMs: 600_000 });
    const error = await refusal(mirrors.fetch('garbage', `git://127.0.0.1:${garbage.port}/repo.git`));
    expect(error.code).toBe('fetch-failed');
    expect(error.message).toMatch(/protocol error|bad line length|unexpected|remote end hung up/i);
  }, 60_000);

  it('fetches from a real git daemon under the same limits', async () => {
    const mirrors = new GitMirrors(dataDir, { connectMs: 10_000, idleMs: 10_000, maxMs: 600_000 });
    const url = `git://127.0.0.1:${daemonPort}/${repo.dir.split('/').pop()}`;
    // The daemon may still be starting: retry a bounded number of times until it answers.
    let fetched = false;
    for (let i = 0; i < 50 && !fetched; i++) {
      fetched = await mirrors.fetch('daemon', url).then(
        () => true,
        () => new Promise<boolean>((done) => setTimeout(() => done(false), 200)),
      );
    }
    expect(fetched).toBe(true);
    expect(mirrors.resolve('daemon', 'main')).toBe(repo.head());
    expect(mirrors.readFile('daemon', repo.head(), 'apps/web/a.yaml')).toBe('a: 1\n');
  }, 60_000);
});
