import { describe, expect, it } from 'vitest';
import { freePort } from '../fleet/free-port.js';
import { runInProcess } from '../testing/run-in-process.js';
import { run } from './history.command.js';

describe('flotilla history without a hub', () => {
  it('exits 1 naming the URL when nothing listens there, with nothing on stdout even for --ndjson', async () => {
    const hub = `http://127.0.0.1:${await freePort()}`;
    const r = await runInProcess(run, ['--all', '--ndjson', '--hub', hub]);
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(r.err).toMatch(
      new RegExp(`^flotilla history: cannot reach the hub at ${hub}: connect ECONNREFUSED`),
    );
  });

  it.each([
    [['--limit', '0'], "--limit must be a positive integer, not '0'"],
    [['--limit', '2.5'], "--limit must be a positive integer, not '2.5'"],
    [['--limit', '5', '--all'], '--limit and --all exclude each other'],
    [['--ndjson', '-o', 'json'], '--ndjson and -o exclude each other'],
    [['web-eu1'], "unexpected argument 'web-eu1'"],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const r = await runInProcess(run, argv);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`flotilla history: ${message}`);
  });
});
