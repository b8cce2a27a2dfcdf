import { describe, expect, it } from 'vitest';
import { freePort } from '../fleet/free-port.js';
import { runInProcess } from '../testing/run-in-process.js';
import { run } from './targets.command.js';

describe('flotilla targets without a hub', () => {
  it('exits 1 naming the URL when nothing listens there', async () => {
    const hub = `http://127.0.0.1:${await freePort()}`;
    const r = await runInProcess(run, ['--cluster', 'eu1', '--hub', hub, '-o', 'json']);
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(r.err).toMatch(
      new RegExp(`^flotilla targets: cannot reach the hub at ${hub}: connect ECONNREFUSED`),
    );
  });

  it.each([
    [['eu1'], "unexpected argument 'eu1'"],
    [['--cluster'], "Option '--cluster <value>' argument missing"],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const r = await runInProcess(run, argv);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`flotilla targets: ${message}`);
  });
});
