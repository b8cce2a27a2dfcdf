import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runInProcess } from '../testing/run-in-process.js';
import { run as context, runLogin as login } from './context.command.js';
import { run as clusters } from './clusters.command.js';

/** An HTTP server on 127.0.0.1 that records the Authorization header of each request. */
async function recordingServer(acceptToken: string | null) {
  const seen: (string | null)[] = [];
  const server: Server = createServer((req, res) => {
    const auth = req.headers.authorization ?? null;
    seen.push(auth);
    if (acceptToken !== null && auth !== `Bearer ${acceptToken}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 'unauthenticated', message: 'a bearer token is required' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('flotilla context and login', () => {
  let dir: string;
  let file: string;
  let hubA: Awaited<ReturnType<typeof recordingServer>>;
  let hubB: Awaited<ReturnType<typeof recordingServer>>;
  const saved = { ...process.env };

  beforeAll(async () => {
    hubA = await recordingServer('token-a');
    hubB = await recordingServer(null);
  });
  afterAll(async () => {
    await hubA.close();
    await hubB.close();
  });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'flotilla-cli-config-'));
    file = join(dir, 'flotilla', 'config.yaml');
    for (const k of ['FLOTILLA_HUB_URL', 'FLOTILLA_TOKEN', 'FLOTILLA_CONTEXT', 'FLOTILLA_CONFIG'])
      delete process.env[k];
    process.env['XDG_CONFIG_HOME'] = dir;
    hubA.seen.length = 0;
    hubB.seen.length = 0;
  });
  afterEach(() => {
    process.env = { ...saved };
    rmSync(dir, { recursive: true, force: true });
  });

  it('logs in (checking the token), saves the context 0600 and makes it current; lists without the token', async () => {
    const refused = await runInProcess(login, ['--hub', hubA.url, '--token', 'wrong', '--context', 'prod']);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('401');
    expect(() => statSync(file)).toThrow();

    const ok = await runInProcess(login, ['--hub', hubA.url, '--token', 'token-a', '--context', 'prod']);
    expect([ok.code, ok.err]).toEqual([0, '']);
    expect(ok.out).toContain(`Logged in to ${hubA.url} as context prod (now current)`);
    expect(statSync(file).mode & 0o777).toBe(0o600);

    const listed = await runInProcess(context, ['list', '-o', 'json']);
    expect(JSON.parse(listed.out)).toEqual([{ name: 'prod', hub: hubA.url, token: 'set', current: true }]);
    expect(listed.out).not.toContain('token-a');
  });

  it('sends a context token only to its own hub; flags and environment win', async () => {
    expect((await runInProcess(context, ['set', 'prod', '--hub', hubA.url, '--token', 'token-a'])).code).toBe(
      0,
    );
    expect((await runInProcess(context, ['set', 'lab', '--hub', hubB.url])).code).toBe(0);
    // The first context set became current.
    expect((await runInProcess(context, ['current'])).out.trim()).toBe('prod');

    expect((await runInProcess(clusters, ['list'])).code).toBe(0);
    expect(hubA.seen).toEqual(['Bearer token-a']);

    // --hub elsewhere: the context's token does not follow it.
    expect((await runInProcess(clusters, ['list', '--hub', hubB.url])).code).toBe(0);
    expect(hubB.seen).toEqual([null]);

    expect((await runInProcess(clusters, ['list', '--context', 'lab'])).code).toBe(0);
    process.env['FLOTILLA_CONTEXT'] = 'lab';
    expect((await runInProcess(clusters, ['list'])).code).toBe(0);
    expect(hubB.seen).toEqual([null, null, null]);
    delete process.env['FLOTILLA_CONTEXT'];

    process.env['FLOTILLA_TOKEN'] = 'from-env';
    expect((await runInProcess(clusters, ['list'])).code).toBe(1);
    expect(hubA.seen.at(-1)).toBe('Bearer from-env');
    delete process.env['FLOTILLA_TOKEN'];

    expect((await runInProcess(context, ['use', 'lab'])).code).toBe(0);
    expect((await runInProcess(clusters, ['list'])).code).toBe(0);
    expect(hubB.seen).toHaveLength(4);

    expect((await runInProcess(context, ['delete', 'lab'])).code).toBe(0);
    expect(readFileSync(file, 'utf8')).not.toContain('currentContext');
  });

  it('refuses unknown contexts, bad names and a broken file, naming what is wrong', async () => {
    expect((await runInProcess(context, ['set', 'prod', '--hub', hubA.url])).code).toBe(0);
    const unknown = await runInProcess(clusters, ['list', '--context', 'nope']);
    expect([unknown.code, unknown.err]).toEqual([
      2,
      `flotilla clusters: no context 'nope' in ${file} (known: prod); see 'flotilla context list'\n`,
    ]);
    const badName = await runInProcess(context, ['set', 'Prod!', '--hub', hubA.url]);
    expect(badName.code).toBe(2);
    expect(badName.err).toContain("NAME 'Prod!'");
    const badHub = await runInProcess(context, ['set', 'x', '--hub', 'ftp://hub']);
    expect(badHub.err).toContain("--hub must be an http(s) URL, not 'ftp://hub'");

    writeFileSync(
      file,
      'apiVersion: flotilla.dev/v1alpha1\nkind: CliConfig\ncontexts:\n  - name: a\n    hub: nope\n',
    );
    const broken = await runInProcess(clusters, ['list']);
    expect(broken.code).toBe(2);
    expect(broken.err).toContain(`${file}: contexts[0].hub:`);
    // Flags and environment that say everything do not need the file.
    expect((await runInProcess(clusters, ['list', '--hub', hubB.url, '--token', 't'])).code).toBe(0);
  });
});
