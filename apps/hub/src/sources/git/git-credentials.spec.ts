import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openGitAuth } from './git-credentials.js';

describe('openGitAuth', () => {
  it('HTTPS token: an askpass script that answers from the environment; gone after dispose', async () => {
    const session = await openGitAuth({ type: 'https-token', username: 'bot', token: 't0ken' }, '/dev/null');
    const script = session.env['GIT_ASKPASS'] ?? '';
    expect(readFileSync(script, 'utf8')).not.toContain('t0ken');
    const ask = (prompt: string) =>
      execFileSync(script, [prompt], { env: { ...session.env, PATH: '/usr/bin:/bin' }, encoding: 'utf8' });
    expect(ask("Username for 'https://git.example': ")).toBe('bot\n');
    expect(ask("Password for 'https://bot@git.example': ")).toBe('t0ken\n');
    await session.dispose();
    expect(existsSync(script)).toBe(false);
  });

  it('SSH key: a 0600 key file named by GIT_SSH_COMMAND; gone after dispose', async () => {
    const key = '-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----';
    const session = await openGitAuth({ type: 'ssh-key', privateKey: key }, '/tmp/known hosts');
    const command = session.env['GIT_SSH_COMMAND'] ?? '';
    const file = /-i '([^']+)'/.exec(command)?.[1] ?? '';
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toBe(`${key}\n`);
    expect(command).toContain("-o UserKnownHostsFile='/tmp/known hosts'");
    expect(command).toContain('-o StrictHostKeyChecking=accept-new');
    await session.dispose();
    expect(existsSync(file)).toBe(false);
  });
});
