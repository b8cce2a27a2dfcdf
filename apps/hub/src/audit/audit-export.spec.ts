import { describe, expect, it } from 'vitest';
import {
  auditCsvHeader as csvHeader,
  auditCsvRow as csvRow,
  auditNdjsonLine as ndjsonLine,
  csvField,
} from '@flotilla/contract';
import { exportLines } from './audit-export.js';
import type { AuditEventView } from './audit.service.js';

const event: AuditEventView = {
  id: '7',
  at: '2026-01-01T00:00:00.000Z',
  actor: 'ops, "night"',
  action: 'cluster.created',
  scope: 'cluster:eu1',
  details: { labels: { region: 'eu', tier: 'a' } },
  prevHash: 'a'.repeat(64),
  hash: 'b'.repeat(64),
};

describe('audit export', () => {
  it('quotes CSV fields as RFC 4180 says', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
  });

  it('writes a header and one row per event', async () => {
    expect(csvHeader()).toBe('id,at,actor,action,scope,details,prevHash,hash\r\n');
    expect(csvRow(event)).toBe(
      `7,2026-01-01T00:00:00.000Z,"ops, ""night""",cluster.created,cluster:eu1,` +
        `"{""labels"":{""region"":""eu"",""tier"":""a""}}",${'a'.repeat(64)},${'b'.repeat(64)}\r\n`,
    );
    const two = () => [event, { ...event, id: '6' }];
    const csv: string[] = [];
    for await (const l of exportLines(two(), 'csv')) csv.push(l);
    expect(csv).toHaveLength(3);
    const nd: string[] = [];
    for await (const l of exportLines(two(), 'ndjson')) nd.push(l);
    expect(nd.map((l) => (JSON.parse(l) as AuditEventView).id)).toEqual(['7', '6']);
    expect(ndjsonLine(event).endsWith('}\n')).toBe(true);
  });
});
