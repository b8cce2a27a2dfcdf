import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { simpleGit } from 'simple-git';
import { REPO_ROOT } from '../fleet/local-fleet.js';

export const EXAMPLE_FLEET_DIR = join(REPO_ROOT, 'examples/demo-fleet');

/** Makes a Git repository at `dir` holding the example fleet, committed on `main`; returns its head commit. */
export async function createExampleRepo(dir: string): Promise<string> {
  mkdirSync(dir, { recursive: true });
  cpSync(EXAMPLE_FLEET_DIR, dir, { recursive: true });
  const git = simpleGit(dir);
  await git.init(['--initial-branch=main']);
  await git.addConfig('user.name', 'Flotilla Demo').addConfig('user.email', 'demo@flotilla.local');
  await git.add('.');
  await git.commit('Example fleet: the guestbook app and the hello chart on every cluster');
  return (await git.revparse(['HEAD'])).trim();
}
