import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface TestGitRepo {
  dir: string;
  /** `file://` URL the hub can mirror. */
  url: string;
  /** Writes (or, with `null`, deletes) files and commits them; returns the new commit sha. */
  commit(files: Record<string, string | null>, message?: string): string;
  /** Creates or moves a tag to the current commit. */
  tag(name: string): void;
  head(): string;
  remove(): void;
}

/** A real Git repository in a temp dir, branch `main`, with a first commit of `files`. */
export function createTestGitRepo(files: Record<string, string | null>): TestGitRepo {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-repo-'));
  const git = (...args: string[]) =>
    execFileSync(
      'git',
      ['-C', dir, '-c', 'user.name=Flotilla Test', '-c', 'user.email=test@flotilla.invalid', ...args],
      {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    ).trim();
  git('init', '-q', '--initial-branch=main');
  const repo: TestGitRepo = {
    dir,
    url: `file://${dir}`,
    commit(changes, message = 'change') {
      for (const [path, content] of Object.entries(changes)) {
        const full = join(dir, path);
        if (content === null) {
          rmSync(full, { force: true });
        } else {
          mkdirSync(dirname(full), { recursive: true });
          writeFileSync(full, content);
        }
      }
      git('add', '-A');
      git('commit', '-q', '--allow-empty', '-m', message);
      return repo.head();
    },
    tag(name) {
      git('tag', '-f', name);
    },
    head() {
      return git('rev-parse', 'HEAD');
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
  repo.commit(files, 'initial');
  return repo;
}
