import { chartRepositoryCredentialsViewSchema } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInProcess } from '../testing/run-in-process.js';
import { headersOf, rowOf, startStandInHub, type StandInHub } from '../testing/stand-in-hub.js';
import { run } from './chart-repositories.command.js';

describe('flotilla chart-repositories -o wide against a stand-in hub', () => {
  const credentials = chartRepositoryCredentialsViewSchema.parse({
    id: 'cr1',
    url: 'oci://registry.example/charts',
    username: 'bot',
    createdAt: '2026-12-01T00:00:00.000Z',
    updatedAt: '2026-12-02T00:00:00.000Z',
  });
  let hub: StandInHub;
  beforeAll(async () => {
    hub = await startStandInHub({ '/api/v1/chart-repositories': [credentials] });
  });
  afterAll(() => hub.close());

  it('adds the id and when the credentials were first stored, never the password', async () => {
    const table = await runInProcess(run, ['--hub', hub.url]);
    expect(table.code).toBe(0);
    expect(headersOf(table.out)).toEqual(['URL', 'USERNAME', 'UPDATED']);
    const wide = await runInProcess(run, ['list', '--hub', hub.url, '-o', 'wide']);
    expect(wide.err).toBe('');
    expect(wide.code).toBe(0);
    expect(headersOf(wide.out)).toEqual(Object.keys(rowOf(wide.out)));
    expect(rowOf(wide.out)).toEqual({
      ID: 'cr1',
      URL: 'oci://registry.example/charts',
      USERNAME: 'bot',
      CREATED: '2026-12-01T00:00:00.000Z',
      UPDATED: expect.stringMatching(/^\d+[smhd]$/) as string,
    });
  });
});
