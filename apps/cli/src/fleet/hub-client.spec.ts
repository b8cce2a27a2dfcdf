import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HubClient } from './hub-client.js';

/** A stand-in hub answering one listing from `answer`, recording each request's path and query. */
async function listingServer(
  answer: (url: URL) => unknown,
): Promise<{ url: string; seen: URL[]; server: Server }> {
  const seen: URL[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    seen.push(url);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(answer(url)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

describe('HubClient.everyPage', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((r) => server?.close(r));
    server = undefined;
  });

  it('follows nextCursor to the last page, keeping the filters on every request', async () => {
    const names = ['a', 'b', 'c', 'd', 'e'];
    const hub = await listingServer((url) => {
      const start = url.searchParams.get('cursor') ? names.indexOf(url.searchParams.get('cursor')!) + 1 : 0;
      const items = names.slice(start, start + 2).map((name) => ({ name }));
      return { items, nextCursor: start + 2 < names.length ? items.at(-1)?.name : null };
    });
    server = hub.server;

    const all = await new HubClient(hub.url).targets({ appSet: 'web' });

    expect(all.map((t) => t.name)).toEqual(names);
    expect(
      hub.seen.map((u) => [
        u.pathname,
        u.searchParams.get('appSet'),
        u.searchParams.get('limit'),
        u.searchParams.get('cursor'),
      ]),
    ).toEqual([
      ['/api/v1/targets', 'web', '500', null],
      ['/api/v1/targets', 'web', '500', 'b'],
      ['/api/v1/targets', 'web', '500', 'd'],
    ]);
  });

  it('takes the whole array from a hub that does not page', async () => {
    const hub = await listingServer(() => [{ name: 'eu1' }, { name: 'us1' }]);
    server = hub.server;

    expect((await new HubClient(hub.url).clusters()).map((c) => c.name)).toEqual(['eu1', 'us1']);
    expect(hub.seen).toHaveLength(1);
  });
});
