import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import {
  fleetViewSchema,
  apiComponentSchemas,
  sessionViewSchema,
  type AssignmentsResponse,
  type FleetEventView,
  type FleetView,
  type SessionView,
} from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';

// The fleet view on the real hub (PostgreSQL, Redis, Git): filters and counts computed on the hub,
// keyset paging over clusters, the one current reason per cell, and the live change stream.

let fleet: TwoClusterFleet;
const HOSTILE = '<img src=x onerror=alert(1)>';

const view = async (query = '') => {
  const r = await fleet.call<FleetView>('GET', `/api/v1/fleet${query}`);
  expect(r.status).toBe(200);
  return r.body;
};
const cellOf = (v: FleetView, cluster: string) => v.rows.find((r) => r.cluster === cluster)?.cells[0];

describe('the fleet view', () => {
  beforeAll(async () => {
    fleet = await startTwoClusterFleet({ CLUSTER_OFFLINE_SECONDS: '60' });
    // A third cluster that never registered: offline, never seen, nothing deployed.
    const created = await fleet.call('POST', '/api/v1/clusters', {
      name: 'edge-1',
      labels: { env: 'prod', region: 'eu', note: HOSTILE },
    });
    expect(created.status).toBe(201);
    // eu-1's agent polls, so it is seen; us-1 registered and stays quiet (seen at registration).
    await fleet.agent('eu-1', 'GET', '/api/agent/v1/assignments');
  }, 180_000);
  afterAll(async () => {
    await fleet?.close();
  }, 60_000);

  it('shows every cluster with its targets, agents offline with their last-seen time, and counts', async () => {
    const v = await view();
    expect(v.rows.map((r) => r.cluster)).toEqual(['edge-1', 'eu-1', 'us-1']);
    expect(v.appSets).toEqual(['web']);
    expect(v.counts).toMatchObject({ clusters: 3, offlineClusters: 1, targets: 2 });
    expect(v.counts.sync).toMatchObject({ Unknown: 2, Synced: 0 });
    const edge = v.rows[0]!;
    expect(edge).toMatchObject({ online: false, lastSeenAt: null, cells: [] });
    // Names and labels are data: returned as they were given, for the client to show as text.
    expect(edge.labels.note).toBe(HOSTILE);
    expect(cellOf(v, 'eu-1')).toMatchObject({ target: 'web-eu-1', appSet: 'web', project: 'default' });
    expect(v.nextCursor).toBeNull();
  });

  it('filters by label selector, appset, status and text on the hub, with counts for the matches', async () => {
    expect((await view('?selector=env%3Dprod')).rows.map((r) => r.cluster)).toEqual(['edge-1']);
    expect((await view('?selector=!env')).rows.map((r) => r.cluster)).toEqual(['eu-1', 'us-1']);
    expect((await view(`?selector=${encodeURIComponent('region in (eu),env')}`)).counts.clusters).toBe(1);
    // A filter on targets leaves out clusters with none that match.
    const web = await view('?appSet=web');
    expect(web.rows.map((r) => r.cluster)).toEqual(['eu-1', 'us-1']);
    expect((await view('?appSet=nope')).counts).toMatchObject({ clusters: 0, targets: 0 });
    expect((await view('?status=Offline')).rows.map((r) => r.cluster)).toEqual(['edge-1']);
    expect((await view('?status=Unknown')).counts.targets).toBe(2);
    expect((await view('?status=Synced')).counts.targets).toBe(0);
    const text = await view('?q=US-');
    expect(text.rows.map((r) => r.cluster)).toEqual(['us-1']);
    expect(text.counts).toMatchObject({ clusters: 1, targets: 1 });
  });

  it('pages clusters by name without skipping or repeating one, with the same counts on every page', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 5; i++) {
      const page: FleetView = await view(`?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.counts).toMatchObject({ clusters: 3, targets: 2 });
      seen.push(...page.rows.map((r) => r.cluster));
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    expect(seen).toEqual(['edge-1', 'eu-1', 'us-1']);
  });

  it('refuses a bad query naming the parameter, and changes nothing', async () => {
    const bad = await fleet.call<{ code: string; path: string; message: string }>(
      'GET',
      `/api/v1/fleet?selector=${encodeURIComponent('env in (prod')}`,
    );
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'invalid-request', path: 'query.selector' });
    expect(bad.body.message).toContain('unbalanced parentheses');
    for (const [query, path] of [
      ['limit=0', 'limit'],
      ['limit=201', 'limit'],
      ['status=Sideways', 'status'],
    ]) {
      const r = await fleet.call<{ path: string }>('GET', `/api/v1/fleet?${query}`);
      expect({ status: r.status, path: r.body.path }).toEqual({ status: 400, path });
    }
  });

  it('gives each cell its one current reason, and a deny window changes it', async () => {
    const before = cellOf(await view('?q=eu-1'), 'eu-1');
    expect(before?.reason?.code).not.toBe('WindowClosed');
    const window = await fleet.call('POST', '/api/v1/windows', {
      name: 'freeze-eu',
      kind: 'deny',
      schedule: '* * * * *',
      duration: '1h',
      clusters: ['eu-*'],
      reason: 'INC-7 stabilising',
    });
    expect(window.status).toBe(201);
    const after = cellOf(await view('?q=eu-1'), 'eu-1');
    expect(after?.reason).toMatchObject({ code: 'WindowClosed', window: 'freeze-eu' });
    // The same reason on the targets list, which the CLI reads.
    const targets = await fleet.call<{ name: string; reason: { code: string } | null }[]>(
      'GET',
      '/api/v1/targets?cluster=eu-1',
    );
    expect(targets.body[0]?.reason?.code).toBe('WindowClosed');
    expect(cellOf(await view('?q=us-1'), 'us-1')?.reason?.code).not.toBe('WindowClosed');
    expect((await fleet.call('DELETE', '/api/v1/windows/freeze-eu?reason=done')).status).toBe(204);
  });

  it('tells who is calling: the shared admin token acts as admin, naming its caller', async () => {
    const s = await fleet.call<SessionView>('GET', '/api/v1/session', undefined, 'ann');
    expect(s.body).toMatchObject({ subject: 'user:ann', role: 'admin', open: false });
  });

  it('streams the names of targets that changed, as Server-Sent Events', async () => {
    const abort = new AbortController();
    const res = await fetch(`${fleet.hub.url}/api/v1/events`, {
      signal: abort.signal,
      headers: { authorization: `Bearer ${fleet.adminToken}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    const nextEvent = async (): Promise<FleetEventView> => {
      for (;;) {
        const m = /event: fleet\ndata: (.*)\n\n/.exec(buffer);
        if (m) {
          buffer = buffer.slice((m.index ?? 0) + m[0].length);
          return JSON.parse(m[1]!) as FleetEventView;
        }
        const { value, done } = await reader.read();
        if (done) throw new Error('the event stream ended');
        buffer += value;
      }
    };
    try {
      while (!buffer.includes(': connected')) {
        const { value, done } = await reader.read();
        if (done) throw new Error('the event stream ended');
        buffer += value;
      }
      const [a] = (await fleet.agent<AssignmentsResponse>('eu-1', 'GET', '/api/agent/v1/assignments')).body
        .assignments;
      const at = new Date().toISOString();
      const report = {
        targetId: a!.targetId,
        at,
        id: randomUUID(),
        type: 'sync',
        revision: a!.revision,
        bundleDigest: a!.bundleDigest,
        trigger: 'manual',
        outcome: 'Succeeded',
        startedAt: at,
        finishedAt: at,
      };
      expect((await fleet.agent('eu-1', 'POST', '/api/agent/v1/reports', { reports: [report] })).status).toBe(
        200,
      );
      // Other changes may come first (the fleet is live); the report's must be among the next few.
      const eventWhere = async (matches: (e: FleetEventView) => boolean): Promise<FleetEventView> => {
        let event = await nextEvent();
        for (let seen = 1; seen < 20 && !matches(event); seen++) event = await nextEvent();
        return event;
      };
      expect((await eventWhere((e) => e.targets.includes('web-eu-1'))).targets).toContain('web-eu-1');
      expect(cellOf(await view('?q=eu-1'), 'eu-1')).toMatchObject({ syncStatus: 'Synced' });

      // A new window changes reasons without touching a target row: the stream says so.
      const created = await fleet.call('POST', '/api/v1/windows', {
        name: 'sse-freeze',
        kind: 'deny',
        schedule: '* * * * *',
        duration: '1h',
        clusters: ['us-1'],
      });
      expect(created.status).toBe(201);
      expect((await eventWhere((e) => e.policies)).policies).toBe(true);
      await fleet.call('DELETE', '/api/v1/windows/sse-freeze?reason=done');

      // The appset applied again (its row moves, no target does): the stream names it.
      const web = await fleet.call<{ document: unknown }>('GET', '/api/v1/appsets/web');
      expect((await fleet.call('POST', '/api/v1/appsets', web.body.document)).status).toBe(200);
      expect((await eventWhere((e) => e.appSets.includes('web'))).appSets).toEqual(['web']);
    } finally {
      abort.abort();
      await reader.cancel().catch(() => undefined);
    }
  }, 60_000);

  it('answers the rows at an offset, for a scrolled view that asks for the rows in sight', async () => {
    const middle = await view('?limit=1&offset=1');
    expect(middle.rows.map((r) => r.cluster)).toEqual(['eu-1']);
    expect(middle.counts).toMatchObject({ clusters: 3, targets: 2 });
    expect(middle.nextCursor).not.toBeNull();
    expect((await view('?limit=2&offset=1')).rows.map((r) => r.cluster)).toEqual(['eu-1', 'us-1']);
    const past = await view('?limit=2&offset=3');
    expect([past.rows, past.nextCursor, past.counts.clusters]).toEqual([[], null, 3]);
    const bad = await fleet.call<{ path: string }>('GET', '/api/v1/fleet?offset=-1');
    expect([bad.status, bad.body.path]).toEqual([400, 'offset']);
  });

  it('publishes the shapes of its answers in the OpenAPI document, and its answers have them', async () => {
    type Responses = Record<string, { content: Record<string, { schema: unknown }> }>;
    const docs = await fleet.call<{
      paths: Record<string, { get: { responses: Responses } }>;
      components: { schemas: Record<string, unknown> };
    }>('GET', '/api/docs-json');
    const schemaOf = (path: string, type = 'application/json') =>
      docs.body.paths[path]?.get.responses['200']?.content[type]?.schema;
    const named = (name: string) => ({ $ref: `#/components/schemas/${name}` });
    expect(schemaOf('/api/v1/fleet')).toEqual(named('FleetView'));
    expect(schemaOf('/api/v1/session')).toEqual(named('SessionView'));
    expect(schemaOf('/api/v1/events', 'text/event-stream')).toEqual(named('FleetEventView'));
    expect(schemaOf('/api/v1/rollouts/{appSet}')).toEqual(named('RolloutDetailView'));
    expect(docs.body.components.schemas.SessionView).toEqual(apiComponentSchemas().SessionView);
    // Parsing drops what a schema does not name: an answer equal to its parse has nothing unnamed.
    const v = await view('?limit=2');
    expect(fleetViewSchema.parse(v)).toEqual(v);
    const session = (await fleet.call<SessionView>('GET', '/api/v1/session')).body;
    expect(sessionViewSchema.parse(session)).toEqual(session);
  });
});
