import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';

/**
 * A real HTTP server standing in for a hub: it answers GETs of the given paths (the query ignored)
 * with the given JSON, and anything else 404 as the hub does, so that a command's whole path — its
 * options, the request, the answer, the output — runs as against a hub, without one to start.
 */
export interface StandInHub {
  /** The base URL, for `--hub`. */
  url: string;
  /** Every request, `METHOD /path?query`, in order. */
  requests: string[];
  close(): Promise<void>;
}

export async function startStandInHub(answers: Record<string, unknown>): Promise<StandInHub> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const path = new URL(req.url ?? '/', 'http://stand-in').pathname;
    const found = req.method === 'GET' && Object.hasOwn(answers, path);
    res.writeHead(found ? 200 : 404, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(found ? answers[path] : { code: 'not-found', message: `no ${req.method} ${path} here` }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A table's header row split into its column names (columns are three or more spaces apart). */
export function headersOf(table: string): string[] {
  return (table.split('\n')[0] ?? '').split(/ {3,}/);
}

/**
 * The cells of one row of a table, by column name: each cell starts where its header does (the
 * table pads every column but the last to its widest cell).
 */
export function rowOf(table: string, index = 1): Record<string, string> {
  const lines = table.split('\n');
  const header = lines[0] ?? '';
  const row = lines[index] ?? '';
  const names = headersOf(table);
  const starts = names.map((name, i) => {
    // Search after the previous header: a name may occur inside an earlier one (SYNC in LAST SYNC).
    let from = 0;
    for (let k = 0; k < i; k++) from = header.indexOf(names[k]!, from) + names[k]!.length;
    return header.indexOf(name, from);
  });
  return Object.fromEntries(
    names.map((name, i) => [name, row.slice(starts[i], starts[i + 1] ?? undefined).trim()]),
  );
}
