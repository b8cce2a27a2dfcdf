import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { runInProcess } from '../testing/run-in-process.js';
import { HubApiError } from '../fleet/hub-client.js';
import { age, describeApiError, formatFields, formatTable, shortSha } from './hub-command.js';
import { run as targets } from './targets.command.js';

describe('formatTable', () => {
  it('aligns every column but the last on its widest cell', () => {
    expect(
      formatTable(
        ['NAME', 'SYNC', 'MESSAGE'],
        [
          ['a', 'Synced', 'ok'],
          ['longer-name', 'OutOfSync', ''],
        ],
      ),
    ).toBe(
      ['NAME          SYNC        MESSAGE', 'a             Synced      ok', 'longer-name   OutOfSync'].join(
        '\n',
      ),
    );
  });

  it('prints only the header when there are no rows', () => {
    expect(formatTable(['NAME', 'STATUS'], [])).toBe('NAME   STATUS');
  });
});

describe('formatFields', () => {
  it('aligns values after the longest key', () => {
    expect(
      formatFields([
        ['Name', 'eu1'],
        ['Last seen', 'never'],
      ]),
    ).toBe('Name:       eu1\nLast seen:  never');
  });
});

describe('age and shortSha', () => {
  const now = Date.parse('2026-03-29T12:00:00Z');
  it.each([
    ['2026-03-29T11:59:15Z', '45s'],
    ['2026-03-29T11:58:01Z', '119s'],
    ['2026-03-29T11:55:00Z', '5m'],
    ['2026-03-29T09:00:00Z', '3h'],
    ['2026-03-26T12:00:00Z', '3d'],
    [null, '-'],
  ])('age(%s) is %s', (iso, expected) => {
    expect(age(iso, now)).toBe(expected);
  });

  it('shortens a sha to 7 characters and shows a dash for none', () => {
    expect(shortSha('0123456789abcdef0123456789abcdef01234567')).toBe('0123456');
    expect(shortSha(null)).toBe('-');
  });

  it("shortens each commit of a multi-source target's revision and keeps chart versions whole", () => {
    expect(shortSha('10.2.0-rc.1,0123456789abcdef0123456789abcdef01234567')).toBe('10.2.0-rc.1,0123456');
  });
});

describe('describeApiError', () => {
  const url = 'http://hub.example/api/v1/targets';
  it("names the request's id when the hub failed, the one string its operators search the log for", () => {
    const failed = new HubApiError(
      500,
      { code: 'internal', message: 'internal error; see the hub log for request r-1', requestId: 'r-1' },
      'GET',
      '/api/v1/targets',
      url,
    );
    expect(describeApiError(failed)).toBe(
      `GET ${url} → 500 internal: internal error; see the hub log for request r-1 [request r-1]`,
    );
  });

  it('leaves it out of a refusal, which the message explains', () => {
    const refused = new HubApiError(
      400,
      { code: 'invalid-request', message: 'bad limit', path: 'limit', requestId: 'r-2' },
      'GET',
      '/api/v1/targets',
      url,
    );
    expect(describeApiError(refused)).toBe(`GET ${url} → 400 invalid-request: bad limit (at limit)`);
  });

  it('names the flag that filled the refused field, when the command gives it', () => {
    const refused = new HubApiError(
      400,
      {
        code: 'invalid-request',
        message: 'invalid request body: expiresInMinutes: Too big: expected number to be <=10080',
        path: 'expiresInMinutes',
      },
      'POST',
      '/api/v1/targets/web/sync',
      url,
    );
    expect(describeApiError(refused, 'expires-in-minutes')).toBe(
      `POST ${url} → 400 invalid-request: invalid request body: --expires-in-minutes: Too big: expected number to be <=10080 (--expires-in-minutes; API field expiresInMinutes)`,
    );
  });
});

/**
 * A real HTTP server standing in for a hub that refuses every call, to see what the commands send
 * (the token) and how they report a refusal.
 */
describe('talking to a hub that refuses', () => {
  let server: Server;
  let url: string;
  const seen: IncomingHttpHeaders[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 'unauthorized', message: 'a valid admin token is required' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  afterEach(() => {
    seen.length = 0;
    vi.unstubAllEnvs();
  });

  it('sends --token as a Bearer token and prints the refusal on one line, exit 1', async () => {
    const r = await runInProcess(targets, ['--hub', url, '--token', 's3cret-s3cret-s3cret', '-o', 'json']);
    expect(r).toEqual({
      code: 1,
      out: '',
      err: `flotilla targets: GET ${url}/api/v1/targets?limit=500 → 401 unauthorized: a valid admin token is required\n`,
    });
    expect(seen.map((h) => h.authorization)).toEqual(['Bearer s3cret-s3cret-s3cret']);
  });

  it('takes the hub and the token from FLOTILLA_HUB_URL and FLOTILLA_TOKEN', async () => {
    vi.stubEnv('FLOTILLA_HUB_URL', `${url}/`);
    vi.stubEnv('FLOTILLA_TOKEN', 'from-the-environment');
    const r = await runInProcess(targets, []);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`GET ${url}/api/v1/targets?limit=500 → 401`);
    expect(seen.map((h) => h.authorization)).toEqual(['Bearer from-the-environment']);
  });

  it('sends no Authorization header without a token', async () => {
    vi.stubEnv('FLOTILLA_TOKEN', '');
    await runInProcess(targets, ['--hub', url]);
    expect(seen.map((h) => h.authorization)).toEqual([undefined]);
  });
});
