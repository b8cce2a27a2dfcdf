import 'reflect-metadata';
import pg from 'pg';
import type { Writable } from 'node:stream';
import { startTestHub, type TestHub } from '@flotilla/hub/testing';

/** The break-the-ice admin token of every hub the security suite starts. */
export const ADMIN_TOKEN = 'security-suite-admin-token-0123456789';

export interface Answer<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
}

/** An ApiError body as the hub sends it. */
export interface Refusal {
  code: string;
  message: string;
  path?: string;
}

/**
 * A real hub (PostgreSQL, Redis) with FLOTILLA_ADMIN_TOKEN set, so people's routes need a token.
 * Repositories are fetched when registered or refreshed, never on a timer: "nothing changed"
 * assertions must not race a background fetch.
 */
export function startSecureHub(
  env: Record<string, string> = {},
  options: { logStream?: Writable } = {},
): Promise<TestHub> {
  return startTestHub(
    { FLOTILLA_ADMIN_TOKEN: ADMIN_TOKEN, SOURCE_POLL_INTERVAL_SECONDS: '3600', ...env },
    options,
  );
}

export function caller(hub: TestHub) {
  return async function call<T = Record<string, unknown>>(
    method: string,
    path: string,
    opts: { body?: unknown; rawBody?: string; token?: string | null; headers?: Record<string, string> } = {},
  ): Promise<Answer<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.body !== undefined || opts.rawBody !== undefined) headers['content-type'] ??= 'application/json';
    // Calls act as the admin unless a test says otherwise (`token: null` sends none).
    const token = opts.token === undefined ? ADMIN_TOKEN : opts.token;
    if (token !== null) headers['authorization'] = `Bearer ${token}`;
    const res = await fetch(`${hub.url}${path}`, {
      method,
      headers,
      ...(opts.body !== undefined && { body: JSON.stringify(opts.body) }),
      ...(opts.rawBody !== undefined && { body: opts.rawBody }),
    });
    const text = await res.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = text; // not JSON (an express error page would land here): the test sees the text
    }
    return { status: res.status, body: body as T, headers: res.headers };
  };
}

/** Row counts of the tables a refused request must not touch: "nothing changed" is these, equal. */
export async function tableCounts(hub: TestHub): Promise<Record<string, number>> {
  const db = new pg.Client({ connectionString: hub.postgres.url });
  await db.connect();
  try {
    const counts: Record<string, number> = {};
    for (const table of [
      'Cluster',
      'BootstrapToken',
      'ApiToken',
      'Repository',
      'ApplicationSet',
      'Target',
      'Bundle',
      'SyncRun',
      'ProcessedReport',
      'AuditEvent',
    ]) {
      const r = await db.query<{ n: string }>(`SELECT count(*) AS n FROM "${table}"`);
      counts[table] = Number(r.rows[0]?.n ?? 0);
    }
    return counts;
  } finally {
    await db.end();
  }
}

/** Runs SQL against the hub's database: for setting up states an API cannot make (an expired token). */
export async function sql(
  hub: TestHub,
  text: string,
  params: unknown[] = [],
): Promise<Record<string, unknown>[]> {
  const db = new pg.Client({ connectionString: hub.postgres.url });
  await db.connect();
  try {
    return (await db.query(text, params)).rows as Record<string, unknown>[];
  } finally {
    await db.end();
  }
}

/** Polls `read` until `done` holds (for set-up in hooks, where expect.poll is not available). */
export async function waitUntil<T>(
  what: string,
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await read();
  while (!done(last)) {
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    last = await read();
  }
  return last;
}
