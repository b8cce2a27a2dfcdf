/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-return --
   Watch events are read as untyped JSON documents and checked field by field. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimCluster, type SimClusterHandle } from '../cluster.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Reads newline-delimited watch events until `count` arrived or the server ended the stream. */
async function events(
  url: string,
  count: number,
  during?: () => void,
): Promise<{ events: Obj[]; ended: boolean }> {
  const controller = new AbortController();
  const res = await fetch(url, { signal: controller.signal });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/json');
  const reader = res.body!.getReader();
  const out: Obj[] = [];
  let buffer = '';
  let ended = false;
  during?.();
  while (out.length < count) {
    const { value, done } = await reader.read();
    if (done) {
      ended = true;
      break;
    }
    buffer += Buffer.from(value).toString('utf8');
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      out.push(JSON.parse(buffer.slice(0, nl)) as Obj);
      buffer = buffer.slice(nl + 1);
    }
  }
  controller.abort();
  return { events: out, ended };
}

describe('watch protocol', () => {
  let c: SimClusterHandle;
  const cms = () => c.api.rt('', 'v1', 'configmaps');
  const apply = (name: string, labels: Record<string, string>) =>
    c.api.patch(
      cms(),
      'default',
      name,
      'apply',
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels } },
      { manager: 't', force: true },
    );

  beforeAll(async () => {
    c = await startSimCluster({ name: 'watch', freezeObjects: true });
  });
  afterAll(async () => {
    await c.stop();
  });

  it('sends synthetic ADDED events from resourceVersion 0, then the initial-events-end bookmark', async () => {
    apply('first', { team: 'a' });
    const { events: evs } = await events(
      `${c.url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0&allowWatchBookmarks=true&sendInitialEvents=true`,
      2,
    );
    expect(evs[0]).toMatchObject({
      type: 'ADDED',
      object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'first' } },
    });
    expect(evs[1]).toEqual({
      type: 'BOOKMARK',
      object: {
        kind: 'ConfigMap',
        apiVersion: 'v1',
        metadata: {
          resourceVersion: String(c.api.store.resourceVersion),
          annotations: { 'k8s.io/initial-events-end': 'true' },
        },
      },
    });
  });

  it('turns selector transitions into ADDED and DELETED, and DELETED carries the deletion resourceVersion', async () => {
    const from = c.api.store.resourceVersion;
    const { events: evs } = await events(
      `${c.url}/api/v1/namespaces/default/configmaps?watch=true&labelSelector=team%3Da&resourceVersion=${from}`,
      4,
      () => {
        apply('moving', { team: 'b' });
        apply('moving', { team: 'a' });
        apply('moving', { team: 'b' });
        apply('moving', { team: 'a' });
        c.api.delete(cms(), 'default', 'moving', {});
      },
    );
    expect(evs.map((e) => e['type'])).toEqual(['ADDED', 'DELETED', 'ADDED', 'DELETED']);
    expect(evs[3]!['object']['metadata']['resourceVersion']).toBe(String(c.api.store.resourceVersion));
  });

  it('tells a watch resumed from a resourceVersion that an object matching before it stopped matching', async () => {
    // The object matched before the watch began (a list saw it); the watch starts after that list.
    apply('leaving', { team: 'a' });
    const from = c.api.store.resourceVersion;
    const { events: evs } = await events(
      `${c.url}/api/v1/namespaces/default/configmaps?watch=true&labelSelector=team%3Da&resourceVersion=${from}`,
      1,
      () => {
        apply('leaving', { team: 'b' });
      },
    );
    expect(evs.map((e) => [e['type'], e['object']['metadata']['name']])).toEqual([['DELETED', 'leaving']]);
  });

  it('closes after timeoutSeconds with a final bookmark', async () => {
    const { events: evs, ended } = await events(
      `${c.url}/api/v1/configmaps?watch=1&resourceVersion=${c.api.store.resourceVersion}&allowWatchBookmarks=true&timeoutSeconds=1`,
      5,
    );
    expect(ended).toBe(true);
    expect(evs).toEqual([
      {
        type: 'BOOKMARK',
        object: {
          kind: 'ConfigMap',
          apiVersion: 'v1',
          metadata: { resourceVersion: String(c.api.store.resourceVersion) },
        },
      },
    ]);
    await expect.poll(() => c.openWatches()).toBe(0);
  });

  it('answers list errors and unknown paths as Status objects', async () => {
    const bad = await fetch(`${c.url}/api/v1/configmaps?labelSelector=${encodeURIComponent('a in b')}`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ kind: 'Status', reason: 'BadRequest', code: 400 });
    const field = await fetch(`${c.url}/api/v1/configmaps?fieldSelector=spec.x%3D1`);
    expect(await field.json()).toMatchObject({ code: 400, message: 'field label not supported: spec.x' });
    const missing = await fetch(`${c.url}/apis/nope.example.com/v1/things`);
    expect(missing.status).toBe(404);
    const method = await fetch(`${c.url}/api/v1/namespaces/default/configmaps/first`, {
      method: 'POST',
      body: '{}',
    });
    expect(await method.json()).toMatchObject({ code: 405, reason: 'MethodNotAllowed' });
  });
});
