import { execFileSync, spawn } from 'node:child_process';
import type { TreeEntry } from '@flotilla/manifests';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { simpleGit, type SimpleGit } from 'simple-git';
import { openGitAuth, type GitAuth } from './git-credentials.js';
import { GIT_ENV } from './git-environment.js';
import { DEFAULT_FETCH_TIMEOUTS, remoteGit, type FetchTimeouts } from './remote-git.js';

/** A full commit id: resolved as it is, never a ref to fetch or record. */
export const FULL_SHA = /^[0-9a-f]{40}$/;
const MAX_GIT_OUTPUT_BYTES = 64 * 1024 * 1024;

/**
 * Bounds on what one render may ask of a commit's tree: a repository author chooses the tree, and
 * every entry and symlink costs the hub work before anything is refused.
 */
export const TREE_READ_LIMITS = { maxEntries: 50_000, maxSymlinks: 2_000 };

export class GitMirrorError extends Error {
  override readonly name = 'GitMirrorError';
  constructor(
    readonly code: 'fetch-failed' | 'unknown-revision' | 'not-fetched' | 'read-failed' | 'tree-too-large',
    message: string,
  ) {
    super(message);
  }
}

/**
 * Bare mirrors of the repositories the hub tracks, one per repository under `<dataDir>/repos`.
 * Files are read straight from the object store at a commit; nothing is ever checked out.
 * Reads are synchronous because the generators' RepositoryFiles interface is.
 */
export class GitMirrors {
  private readonly root: string;
  private readonly locks = new Map<string, Promise<unknown>>();
  /** repositoryId → commits a fetch of the mirror did not bring (gone from the remote). */
  private readonly notOnRemote = new Map<string, Set<string>>();
  /** repositoryId → refs the mirror's latest fetch did not find; forgotten at its next fetch. */
  private readonly refsNotFound = new Map<string, Set<string>>();

  constructor(
    dataDir: string,
    private readonly timeouts: FetchTimeouts = DEFAULT_FETCH_TIMEOUTS,
  ) {
    this.root = resolve(dataDir, 'repos');
  }

  dirOf(repositoryId: string): string {
    return `${this.root}/${repositoryId}.git`;
  }

  hasMirror(repositoryId: string): boolean {
    return existsSync(`${this.dirOf(repositoryId)}/HEAD`);
  }

  /**
   * `git fetch --prune` into the mirror (made on first use), authenticated with `auth` when given.
   * Fetches of one mirror never overlap.
   */
  async fetch(repositoryId: string, url: string, auth?: GitAuth): Promise<void> {
    const previous = this.locks.get(repositoryId) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(() => this.fetchNow(repositoryId, url, auth));
    this.locks.set(repositoryId, run);
    try {
      await run;
    } finally {
      if (this.locks.get(repositoryId) === run) this.locks.delete(repositoryId);
    }
  }

  private async fetchNow(repositoryId: string, url: string, auth?: GitAuth): Promise<void> {
    const dir = this.dirOf(repositoryId);
    const fresh = !this.hasMirror(repositoryId);
    const session = auth ? await openGitAuth(auth, `${this.root}/${repositoryId}.known_hosts`) : null;
    try {
      if (fresh) {
        mkdirSync(dir, { recursive: true });
        await this.git(dir).init(true);
        await this.git(dir).addConfig('remote.origin.url', url);
        await this.git(dir).addConfig('remote.origin.fetch', '+refs/*:refs/*');
        await this.git(dir).addConfig('remote.origin.mirror', 'true');
      } else {
        await this.git(dir).addConfig('remote.origin.url', url);
      }
      // --progress: git's progress lines are what tells a slow fetch that is moving from a stuck one.
      await remoteGit(dir, ['fetch', '--prune', '--progress', 'origin'], this.timeouts, session?.env);
      // A mirror's HEAD is not updated by fetch: follow the remote's default branch so "HEAD" means
      // what it means upstream.
      const head = /^ref: (refs\/heads\/\S+)\s+HEAD$/m.exec(
        await remoteGit(dir, ['ls-remote', '--symref', 'origin', 'HEAD'], this.timeouts, session?.env),
      );
      if (head?.[1]) await this.git(dir).raw(['symbolic-ref', 'HEAD', head[1]]);
      this.refsNotFound.delete(repositoryId);
    } catch (e) {
      // A mirror that never fetched is not a mirror: leave nothing that looks usable.
      if (fresh) rmSync(dir, { recursive: true, force: true });
      const message = e instanceof Error ? e.message.trim().split('\n').slice(-3).join(' ') : String(e);
      throw new GitMirrorError('fetch-failed', `cannot fetch ${url}: ${message}`);
    } finally {
      await session?.dispose();
    }
  }

  /** The commit a ref names: a branch, a tag, HEAD, or a full sha present in the mirror. */
  resolve(repositoryId: string, ref: string): string {
    const dir = this.requireMirror(repositoryId);
    const r = ref.trim() === '' ? 'HEAD' : ref.trim();
    const candidates = FULL_SHA.test(r) || r === 'HEAD' ? [r] : [`refs/heads/${r}`, `refs/tags/${r}`, r];
    for (const c of candidates) {
      try {
        return this.run(dir, ['rev-parse', '--verify', '--quiet', `${c}^{commit}`]).trim();
      } catch {
        // try the next spelling
      }
    }
    throw new GitMirrorError(
      'unknown-revision',
      `revision "${ref}" is not a branch, tag or commit of the repository`,
    );
  }

  /**
   * Which of `shas` the mirror does not hold as commits (one `git cat-file --batch-check` for all):
   * another replica may have recorded a commit this replica's mirror has not fetched yet.
   */
  missingCommits(repositoryId: string, shas: string[]): string[] {
    if (shas.length === 0) return [];
    if (!this.hasMirror(repositoryId)) return [...shas];
    const out = execFileSync('git', ['-C', this.dirOf(repositoryId), 'cat-file', '--batch-check'], {
      encoding: 'utf8',
      env: { ...process.env, ...GIT_ENV },
      input: shas.map((s) => `${s}^{commit}\n`).join(''),
      maxBuffer: 16 * 1024 * 1024,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    // One line per input, in order: "<sha> commit <size>" when present, "<input> missing" when not.
    const lines = out.split('\n');
    return shas.filter((_, i) => !/^[0-9a-f]{40} commit /.test(lines[i] ?? ''));
  }

  /** Remembers commits a fetch did not bring, so asking for them again does not fetch again. */
  noteNotOnRemote(repositoryId: string, shas: string[]): void {
    if (shas.length === 0) return;
    const known = this.notOnRemote.get(repositoryId) ?? new Set<string>();
    for (const sha of shas) known.add(sha);
    this.notOnRemote.set(repositoryId, known);
  }

  /** Whether a fetch of this mirror already failed to bring `sha`. */
  knownNotOnRemote(repositoryId: string, sha: string): boolean {
    return this.notOnRemote.get(repositoryId)?.has(sha) ?? false;
  }

  /**
   * Remembers refs the mirror lacks right after a fetch, so an appset naming a branch that does not
   * exist costs one fetch until the next one (a poll), not one per expansion.
   */
  noteRefsNotFound(repositoryId: string, refs: string[]): void {
    if (refs.length === 0) return;
    const known = this.refsNotFound.get(repositoryId) ?? new Set<string>();
    for (const ref of refs) known.add(ref);
    this.refsNotFound.set(repositoryId, known);
  }

  /** Whether the mirror's latest fetch already did not find `ref`. */
  knownRefNotFound(repositoryId: string, ref: string): boolean {
    return this.refsNotFound.get(repositoryId)?.has(ref) ?? false;
  }

  /** Every file path of the commit under `path` ('' = whole tree), '/'-separated. */
  listFiles(repositoryId: string, sha: string, path = ''): string[] {
    const dir = this.requireMirror(repositoryId);
    const p = normalisePath(path);
    const out = this.run(dir, ['ls-tree', '-r', '-z', '--name-only', sha, ...(p ? ['--', `${p}/`] : [])]);
    return out.split('\0').filter(Boolean);
  }

  /**
   * Every entry of the commit's tree (files, symlinks with their targets, submodules) with its size,
   * so a render can refuse what it must not read before anything is read or written. Two child
   * processes whatever the tree holds (`ls-tree`, then one `cat-file --batch` for every symlink), both
   * awaited, so a large tree never holds the event loop; past `limits` the read is refused.
   */
  async listEntries(
    repositoryId: string,
    sha: string,
    limits: { maxEntries: number; maxSymlinks: number } = TREE_READ_LIMITS,
  ): Promise<TreeEntry[]> {
    const dir = this.requireMirror(repositoryId);
    const out = (await this.runAsync(dir, ['ls-tree', '-r', '-l', '-z', '--full-tree', sha])).toString(
      'utf8',
    );
    const records = out.split('\0').filter(Boolean);
    if (records.length > limits.maxEntries) {
      throw new GitMirrorError(
        'tree-too-large',
        `commit ${sha.slice(0, 12)} has ${records.length} tree entries; a render reads at most ${limits.maxEntries}`,
      );
    }
    const entries: TreeEntry[] = [];
    const links: { entry: TreeEntry; object: string }[] = [];
    for (const record of records) {
      // <mode> SP <type> SP <object> SP+ <size> TAB <path>
      const m = /^(\d+) \w+ ([0-9a-f]+) +(\d+|-)\t(.+)$/s.exec(record);
      if (!m) continue;
      const [, mode, object, size, path] = m as unknown as [string, string, string, string, string];
      if (mode === '160000') entries.push({ path, kind: 'submodule', size: 0 });
      else if (mode === '120000') {
        const entry: TreeEntry = { path, kind: 'symlink', size: Number(size) };
        entries.push(entry);
        links.push({ entry, object });
      } else entries.push({ path, kind: 'file', size: Number(size) });
    }
    if (links.length > limits.maxSymlinks) {
      throw new GitMirrorError(
        'tree-too-large',
        `commit ${sha.slice(0, 12)} has ${links.length} symlinks; a render follows at most ${limits.maxSymlinks}`,
      );
    }
    const targets = await this.readBlobs(
      dir,
      links.map((l) => l.object),
    );
    links.forEach((l, i) => (l.entry.linkTarget = targets[i] ?? ''));
    return entries;
  }

  /** The contents of `paths` at `sha`, in order, with one `git cat-file --batch` for all of them. */
  async readFiles(repositoryId: string, sha: string, paths: string[]): Promise<string[]> {
    const dir = this.requireMirror(repositoryId);
    const names = paths.map((p) => `${sha}:${normalisePath(p)}`);
    const contents = await this.readBlobs(dir, names);
    return contents.map((c, i) => {
      if (c === undefined) {
        throw new GitMirrorError('read-failed', `file ${paths[i]} does not exist at ${sha.slice(0, 12)}`);
      }
      return c;
    });
  }

  /** `git cat-file --batch` for `names` (objects or `<sha>:<path>`): undefined where one is missing. */
  private async readBlobs(dir: string, names: string[]): Promise<(string | undefined)[]> {
    if (names.length === 0) return [];
    const out = await this.runAsync(dir, ['cat-file', '--batch'], names.map((n) => `${n}\n`).join(''));
    // Each answer: "<object> <type> <size>\n<content>\n", or "<name> missing\n".
    const contents: (string | undefined)[] = [];
    let at = 0;
    for (let i = 0; i < names.length; i++) {
      const eol = out.indexOf(0x0a, at);
      if (eol < 0) throw new GitMirrorError('read-failed', 'git cat-file answered fewer objects than asked');
      const header = out.subarray(at, eol).toString('utf8');
      const m = /^[0-9a-f]+ (\w+) (\d+)$/.exec(header);
      if (!m) {
        contents.push(undefined);
        at = eol + 1;
        continue;
      }
      const size = Number(m[2]);
      contents.push(m[1] === 'blob' ? out.subarray(eol + 1, eol + 1 + size).toString('utf8') : undefined);
      at = eol + 1 + size + 1;
    }
    return contents;
  }

  /**
   * Writes the commit's files into `target` (an empty directory) for a tool that needs a working
   * tree, such as kustomize: `git archive | tar -x`, nothing touched in the mirror.
   */
  async checkout(repositoryId: string, sha: string, target: string): Promise<void> {
    const dir = this.requireMirror(repositoryId);
    const env = { ...process.env, ...GIT_ENV };
    const archive = spawn('git', ['-C', dir, 'archive', '--format=tar', sha], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const tar = spawn('tar', ['-x', '-C', target], { stdio: ['pipe', 'ignore', 'pipe'] });
    archive.stdout.pipe(tar.stdin);
    let stderr = '';
    archive.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    tar.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = (p: ReturnType<typeof spawn>) =>
      new Promise<number | null>((done) => {
        p.on('error', (e) => {
          stderr += e.message;
          done(-1);
        });
        p.on('close', (code) => done(code));
      });
    const [a, t] = await Promise.all([exited(archive), exited(tar)]);
    if (a !== 0 || t !== 0) {
      throw new GitMirrorError(
        'read-failed',
        `cannot check out ${sha.slice(0, 12)}: ${stderr.trim() || `git archive exit ${a}, tar exit ${t}`}`,
      );
    }
  }

  readFile(repositoryId: string, sha: string, path: string): string {
    const dir = this.requireMirror(repositoryId);
    try {
      return this.run(dir, ['cat-file', 'blob', `${sha}:${normalisePath(path)}`]);
    } catch {
      throw new GitMirrorError('read-failed', `file ${path} does not exist at ${sha.slice(0, 12)}`);
    }
  }

  private requireMirror(repositoryId: string): string {
    if (!this.hasMirror(repositoryId)) {
      throw new GitMirrorError('not-fetched', 'the repository has not been fetched successfully yet');
    }
    return this.dirOf(repositoryId);
  }

  /** Local set-up of a mirror (init, config): nothing here talks to the remote. */
  private git(dir: string): SimpleGit {
    return simpleGit({ baseDir: dir, timeout: { block: 60_000 } });
  }

  /** `git` in a child process the event loop waits for, not one it blocks on. */
  private runAsync(dir: string, args: string[], input?: string): Promise<Buffer> {
    return new Promise((done, fail) => {
      const child = spawn('git', ['-C', dir, ...args], {
        env: { ...process.env, ...GIT_ENV },
        stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      });
      const chunks: Buffer[] = [];
      let size = 0;
      let stderr = '';
      child.stdout?.on('data', (d: Buffer) => {
        size += d.length;
        if (size > MAX_GIT_OUTPUT_BYTES) {
          child.kill('SIGKILL');
          return;
        }
        chunks.push(d);
      });
      child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', (e) => fail(new GitMirrorError('read-failed', `git ${args[0]}: ${e.message}`)));
      child.on('close', (code) => {
        if (size > MAX_GIT_OUTPUT_BYTES) {
          fail(
            new GitMirrorError('read-failed', `git ${args[0]} wrote more than ${MAX_GIT_OUTPUT_BYTES} bytes`),
          );
        } else if (code !== 0) {
          fail(
            new GitMirrorError('read-failed', `git ${args[0]} failed: ${stderr.trim() || `exit ${code}`}`),
          );
        } else done(Buffer.concat(chunks));
      });
      if (input !== undefined) child.stdin?.end(input);
    });
  }

  private run(dir: string, args: string[]): string {
    return execFileSync('git', ['-C', dir, ...args], {
      encoding: 'utf8',
      env: { ...process.env, ...GIT_ENV },
      maxBuffer: 64 * 1024 * 1024,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  }
}

/** `./apps/x/` → `apps/x`; '.' and '' → '' (the repository root). */
export function normalisePath(path: string): string {
  const p = path.replace(/^\.\/+/, '').replace(/\/+$/, '');
  return p === '.' ? '' : p;
}
