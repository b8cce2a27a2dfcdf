import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllowedSigners } from '@flotilla/fleet-config';
import { commitSignatures, CommitVerifierError, gpgFingerprints, isAncestor } from './commit-verifier.js';

// Real git, ssh-keygen and gpg: keys made here sign real commits; nothing is mocked.

let dir: string;
let repo: string;
let gnupg: string;
const signers: Record<string, string> = {};
let gpgKeyring = '';
let gpgFingerprint = '';
const commits: Record<string, string> = {};

const git = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  execFileSync('git', ['-C', repo, '-c', 'user.name=T', '-c', 'user.email=t@x.invalid', ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  }).trim();

function commit(name: string, sign: string[] = [], env: NodeJS.ProcessEnv = {}): string {
  writeFileSync(join(repo, 'file'), name);
  git(['add', '-A']);
  git([...sign, 'commit', '-q', ...(sign.length ? ['-S'] : []), '-m', name], env);
  return (commits[name] = git(['rev-parse', 'HEAD']));
}
const ssh = (who: string) => ['-c', 'gpg.format=ssh', '-c', `user.signingkey=${join(dir, who)}`];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'flotilla-verifier-spec-'));
  repo = join(dir, 'repo');
  execFileSync('git', ['init', '-q', '--initial-branch=main', repo]);
  for (const who of ['alice', 'bob']) {
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', who, '-f', join(dir, who)]);
    const [type, key] = readFileSync(join(dir, `${who}.pub`), 'utf8').split(' ');
    signers[who] = `${who}@example.com ${type} ${key}`;
  }
  gnupg = mkdtempSync(join(tmpdir(), 'flotilla-gnupg-spec-'));
  const gpg = (args: string[]) =>
    execFileSync('gpg', ['--batch', '--quiet', ...args], {
      env: { ...process.env, GNUPGHOME: gnupg },
      encoding: 'utf8',
    });
  gpg(['--passphrase', '', '--quick-gen-key', 'Carol <carol@example.com>', 'ed25519', 'sign', 'never']);
  gpgKeyring = gpg(['--armor', '--export']);
  gpgFingerprint = /^fpr:+([0-9A-F]{40}):/m.exec(gpg(['--with-colons', '--list-keys']))![1]!;

  commit('unsigned-1');
  commit('alice-1', ssh('alice'));
  commit('unsigned-2');
  commit('bob-1', ssh('bob'));
  commit('carol-gpg', ['-c', `user.signingkey=${gpgFingerprint}`], { GNUPGHOME: gnupg });
  commit('alice-2', ssh('alice'));
}, 60_000);
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(gnupg, { recursive: true, force: true });
});

const onlyAlice = () => ({ allowedSigners: signers['alice']!, gpgKeyring: '' });

describe('commitSignatures: git judges each commit against only the allowed keys', () => {
  it.each([
    {
      name: 'a commit signed by an allowed SSH key',
      commit: 'alice-1',
      status: 'G',
      signer: 'alice@example.com',
    },
    { name: 'an unsigned commit', commit: 'unsigned-2', status: 'N', signer: '' },
    { name: 'an SSH key not among the allowed signers', commit: 'bob-1', status: 'U', signer: '' },
    { name: 'a GPG signature whose key is not allowed', commit: 'carol-gpg', status: 'E', signer: '' },
  ])('$name → $status', async ({ commit: name, status, signer }) => {
    const [s] = await commitSignatures(repo, { commit: commits[name]! }, onlyAlice());
    expect(s).toMatchObject({ commit: commits[name], status, signer });
  });

  it('the SSH fingerprint git reports is the one the allowed-signers list computes', async () => {
    const [s] = await commitSignatures(repo, { commit: commits['alice-1']! }, onlyAlice());
    expect(s!.fingerprint).toBe(parseAllowedSigners(signers['alice']!)[0]!.fingerprint);
  });

  it('a GPG key in the allowed keyring verifies (G), without any trust set by hand', async () => {
    const [s] = await commitSignatures(
      repo,
      { commit: commits['carol-gpg']! },
      { allowedSigners: '', gpgKeyring },
    );
    expect(s).toMatchObject({
      status: 'G',
      fingerprint: gpgFingerprint,
      signer: 'Carol <carol@example.com>',
    });
  });

  it('a range lists every commit since the last verified one, newest first', async () => {
    const list = await commitSignatures(
      repo,
      { commit: commits['alice-2']!, since: commits['alice-1']! },
      onlyAlice(),
    );
    expect(list.map((s) => [s.commit, s.status])).toEqual([
      [commits['alice-2'], 'G'],
      [commits['carol-gpg'], 'E'],
      [commits['bob-1'], 'U'],
      [commits['unsigned-2'], 'N'],
    ]);
  });

  it('a range that is empty (the commit is the last verified one) judges the commit itself', async () => {
    const list = await commitSignatures(
      repo,
      { commit: commits['alice-1']!, since: commits['alice-2']! },
      onlyAlice(),
    );
    expect(list.map((s) => s.commit)).toEqual([commits['alice-1']]);
  });

  it('an unknown commit is an error, and no temp dir is left behind', async () => {
    const before = readdirSync(tmpdir()).filter((f) => f.startsWith('flotilla-verify-')).length;
    await expect(commitSignatures(repo, { commit: 'f'.repeat(40) }, onlyAlice())).rejects.toThrow(
      CommitVerifierError,
    );
    expect(readdirSync(tmpdir()).filter((f) => f.startsWith('flotilla-verify-')).length).toBe(before);
  });
});

describe('gpgFingerprints and isAncestor', () => {
  it('lists the primary keys of an armored keyring; refuses one that holds none', async () => {
    expect(await gpgFingerprints(gpgKeyring)).toEqual([gpgFingerprint]);
    await expect(gpgFingerprints('-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nnope\n')).rejects.toThrow(
      CommitVerifierError,
    );
  });

  it('tells whether one commit is in the history of another', async () => {
    expect(await isAncestor(repo, commits['alice-1']!, commits['alice-2']!)).toBe(true);
    expect(await isAncestor(repo, commits['alice-2']!, commits['alice-1']!)).toBe(false);
  });
});
