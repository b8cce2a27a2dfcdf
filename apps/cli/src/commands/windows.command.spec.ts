import { syncWindowVersionViewSchema, syncWindowViewSchema } from '@flotilla/contract';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseRfc3339, run } from './windows.command.js';
import { runInProcess, type CommandOutcome } from '../testing/run-in-process.js';
import { headersOf, rowOf, startStandInHub, type StandInHub } from '../testing/stand-in-hub.js';

let dir: string;
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'flotilla-windows-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

const flotillaWindows = (...argv: string[]): Promise<CommandOutcome> => runInProcess(run, argv);

const PARIS = `- kind: deny
  schedule: "30 2 * * *"
  duration: 1h
  timeZone: Europe/Paris
  applications: [guest*]
- kind: allow
  schedule: "0 9 * * 1-5"
  duration: 8h
  timeZone: Europe/Paris
  namespaces: [prod]
  manualSync: true
`;

describe('flotilla windows', () => {
  it('prints one JSON result for one file and one time', async () => {
    const f = file('paris.yaml', PARIS);
    const r = await flotillaWindows(
      '-f',
      f,
      '--at',
      '2026-03-28T01:45:00Z',
      '--app',
      'guestbook',
      '--namespace',
      'prod',
      '-o',
      'json',
    );
    expect(r.code).toBe(0);
    expect(r.err).toBe('');
    expect(JSON.parse(r.out)).toEqual({
      canSync: false,
      active: [0],
      matching: [0, 1],
      // The deny ends at 02:30Z on Saturday, but outside the weekday allow window only Monday 09:00 CEST opens.
      nextChange: '2026-03-30T07:00:00Z',
    });
  });

  it('honours --manual and --cluster', async () => {
    const f = file('manual.yaml', PARIS);
    const auto = await flotillaWindows(
      '-f',
      f,
      '--at',
      '2026-03-29T12:00:00+02:00',
      '--namespace',
      'prod',
      '-o',
      'json',
    );
    const manual = await flotillaWindows(
      '-f',
      f,
      '--at',
      '2026-03-29T12:00:00+02:00',
      '--namespace',
      'prod',
      '--manual',
      '-o',
      'json',
    );
    // Sunday: the weekday allow window is closed, and only manual syncs pass it.
    expect(JSON.parse(auto.out)).toMatchObject({ canSync: false, active: [], matching: [1] });
    expect(JSON.parse(manual.out)).toMatchObject({ canSync: true, active: [], matching: [1] });
    const cluster = file(
      'cluster.yaml',
      '- {kind: deny, schedule: "* * * * *", duration: 1h, clusters: ["eu-*"]}\n',
    );
    const hit = await flotillaWindows(
      '-f',
      cluster,
      '--at',
      '2026-01-05T10:00:00Z',
      '--cluster',
      'eu-west',
      '-o',
      'json',
    );
    expect(JSON.parse(hit.out)).toEqual({ canSync: false, active: [0], matching: [0], nextChange: null });
  });

  it('prints an array, file-major, for repeated -f and --at', async () => {
    const a = file('a.yaml', '- {kind: deny, schedule: "0 10 * * *", duration: 1h, applications: ["*"]}\n');
    const b = file(
      'b.json',
      '[{"kind": "allow", "schedule": "0 10 * * *", "duration": "1h", "applications": ["*"]}]',
    );
    const r = await flotillaWindows(
      '-f',
      a,
      '-f',
      b,
      '--at',
      '2026-01-05T10:30:00Z',
      '--at',
      '2026-01-05T12:00:00Z',
      '--app',
      'x',
      '-o',
      'json',
    );
    expect(r.code).toBe(0);
    const results = JSON.parse(r.out) as { canSync: boolean; nextChange: string | null }[];
    expect(results.map((x) => [x.canSync, x.nextChange])).toEqual([
      [false, '2026-01-05T11:00:00Z'],
      [true, '2026-01-06T10:00:00Z'],
      [true, '2026-01-05T11:00:00Z'],
      [false, '2026-01-06T10:00:00Z'],
    ]);
  });

  it('treats an empty file as no windows', async () => {
    const r = await flotillaWindows(
      '-f',
      file('empty.yaml', ''),
      '--at',
      '2026-01-05T10:30:00Z',
      '-o',
      'json',
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual({ canSync: true, active: [], matching: [], nextChange: null });
  });

  it('exits 1 with {"error"} naming the index of an invalid window', async () => {
    const f = file('bad.yaml', PARIS + '- {kind: allow, schedule: "* * *", duration: 1h}\n');
    const r = await flotillaWindows('-f', f, '--at', '2026-01-05T10:30:00Z', '-o', 'json');
    expect(r.code).toBe(1);
    const body = JSON.parse(r.out) as { error: string };
    expect(Object.keys(body)).toEqual(['error']);
    expect(body.error).toContain('sync window 2');
    expect(body.error).toContain('schedule');
  });

  for (const [what, window] of [
    ['kind', '{kind: maybe, schedule: "* * * * *", duration: 1h}'],
    ['duration', '{kind: deny, schedule: "* * * * *", duration: 2d}'],
    ['time zone', '{kind: deny, schedule: "* * * * *", duration: 1h, timeZone: Europe/Atlantis}'],
  ]) {
    it(`exits 1 for a bad ${what}`, async () => {
      const r = await flotillaWindows(
        '-f',
        file(`bad-${what}.yaml`, `- ${window}\n`),
        '--at',
        '2026-01-05T10:30:00Z',
        '-o',
        'json',
      );
      expect(r.code).toBe(1);
      expect((JSON.parse(r.out) as { error: string }).error).toContain('sync window 0');
    });
  }

  it('exits 2 with one line on stderr for an unreadable file', async () => {
    const r = await flotillaWindows(
      '-f',
      join(dir, 'missing.yaml'),
      '--at',
      '2026-01-05T10:30:00Z',
      '-o',
      'json',
    );
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toContain('ENOENT');
  });

  it('exits 2 for invalid YAML, a bad --at, or missing flags', async () => {
    const broken = file('broken.yaml', '- {kind: deny\n');
    expect((await flotillaWindows('-f', broken, '--at', '2026-01-05T10:30:00Z', '-o', 'json')).code).toBe(2);
    const ok = file('ok.yaml', '[]');
    expect((await flotillaWindows('-f', ok, '--at', 'yesterday', '-o', 'json')).code).toBe(2);
    expect((await flotillaWindows('-f', ok, '--at', '2026-02-30T10:00:00Z', '-o', 'json')).code).toBe(2);
    expect((await flotillaWindows('-f', ok, '-o', 'json')).code).toBe(2);
    expect((await flotillaWindows('--at', '2026-01-05T10:30:00Z', '-o', 'json')).code).toBe(2);
    expect((await flotillaWindows('-f', ok, '--at', '2026-01-05T10:30:00Z', '--bogus')).code).toBe(2);
  });

  it('answers thousands of times in one call', async () => {
    const f = file('many.yaml', PARIS);
    const times = Array.from({ length: 2000 }, (_, i) =>
      new Date(Date.UTC(2026, 0, 1) + i * 4_380_000).toISOString(),
    );
    const r = await flotillaWindows(
      '-f',
      f,
      ...times.flatMap((t) => ['--at', t]),
      '--app',
      'guestbook',
      '-o',
      'json',
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toHaveLength(2000);
  });
});

describe('parseRfc3339', () => {
  it('reads offsets and fractions', () => {
    expect(parseRfc3339('2026-03-29T03:30:00+02:00')).toBe(Date.UTC(2026, 2, 29, 1, 30));
    expect(parseRfc3339('2026-03-29t01:30:00.25z')).toBe(Date.UTC(2026, 2, 29, 1, 30, 0, 250));
    expect(parseRfc3339('2026-11-01T01:30:00-05:00')).toBe(Date.UTC(2026, 10, 1, 6, 30));
    // Finer than a double can hold at this magnitude: still strictly after the whole second.
    expect(parseRfc3339('2026-01-05T10:00:00.000000001Z')).toBeGreaterThan(Date.UTC(2026, 0, 5, 10));
  });
});

describe('flotilla windows list and history -o wide against a stand-in hub', () => {
  const window = syncWindowViewSchema.parse({
    name: 'eu-night-freeze',
    kind: 'deny',
    schedule: '0 22 * * *',
    duration: '8h',
    timeZone: 'Europe/Paris',
    applications: [],
    namespaces: [],
    clusters: ['eu-*'],
    manualSync: true,
    andOperator: false,
    projects: ['payments'],
    version: 3,
    description: 'no deploys\nat night',
    createdAt: '2026-12-01T00:00:00.000Z',
    updatedAt: '2026-12-02T00:00:00.000Z',
  });
  let hub: StandInHub;
  beforeAll(async () => {
    const version = syncWindowVersionViewSchema.parse({
      version: 3,
      change: 'updated',
      window,
      projects: window.projects,
      description: window.description,
      actor: 'user:ana',
      reason: 'longer freeze',
      at: '2026-12-02T00:00:00.000Z',
    });
    hub = await startStandInHub({
      '/api/v1/windows': [window],
      '/api/v1/windows/eu-night-freeze/history': [version],
    });
  });
  afterAll(() => hub.close());

  it('adds the projects, when the window last changed and its description', async () => {
    const table = await runInProcess(run, ['list', '--hub', hub.url]);
    expect(table.code).toBe(0);
    expect(headersOf(table.out)).toEqual([
      'NAME',
      'KIND',
      'SCHEDULE',
      'DURATION',
      'TIME ZONE',
      'MANUAL',
      'SELECTORS',
      'VERSION',
    ]);
    const wide = await runInProcess(run, ['list', '--hub', hub.url, '-o', 'wide']);
    expect(wide.err).toBe('');
    expect(wide.code).toBe(0);
    expect(headersOf(wide.out)).toEqual(Object.keys(rowOf(wide.out)));
    expect(rowOf(wide.out)).toEqual({
      NAME: 'eu-night-freeze',
      KIND: 'deny',
      SCHEDULE: '0 22 * * *',
      DURATION: '8h',
      'TIME ZONE': 'Europe/Paris',
      MANUAL: 'true',
      PROJECTS: 'payments',
      SELECTORS: 'clusters=eu-*',
      VERSION: '3',
      UPDATED: '2026-12-02T00:00:00.000Z',
      DESCRIPTION: 'no deploys at night',
    });
  });

  it("history adds each version's time zone, manual sync, projects and selectors", async () => {
    const table = await runInProcess(run, ['history', 'eu-night-freeze', '--hub', hub.url]);
    expect(table.code).toBe(0);
    expect(headersOf(table.out)).toEqual([
      'VERSION',
      'AT',
      'CHANGE',
      'ACTOR',
      'KIND',
      'SCHEDULE',
      'DURATION',
      'REASON',
    ]);
    const wide = await runInProcess(run, ['history', 'eu-night-freeze', '--hub', hub.url, '-o', 'wide']);
    expect(wide.err).toBe('');
    expect(wide.code).toBe(0);
    expect(headersOf(wide.out)).toEqual(Object.keys(rowOf(wide.out)));
    expect(rowOf(wide.out)).toEqual({
      VERSION: '3',
      AT: '2026-12-02T00:00:00.000Z',
      CHANGE: 'updated',
      ACTOR: 'user:ana',
      KIND: 'deny',
      SCHEDULE: '0 22 * * *',
      DURATION: '8h',
      'TIME ZONE': 'Europe/Paris',
      MANUAL: 'true',
      PROJECTS: 'payments',
      SELECTORS: 'clusters=eu-*',
      REASON: 'longer freeze',
    });
  });
});
