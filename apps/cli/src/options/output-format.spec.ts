import { describe, expect, it } from 'vitest';
import { UsageError } from '../usage-error.js';
import {
  columnsTable,
  formatResult,
  HUB_OUTPUT_FORMATS,
  LISTING_OUTPUT_FORMATS,
  parseHubOutputFormat,
  parseOutputFormat,
  type Column,
} from './output-format.js';

describe('parseOutputFormat', () => {
  it('takes one of the accepted values, table when -o is not given', () => {
    expect(parseOutputFormat('json', HUB_OUTPUT_FORMATS)).toBe('json');
    expect(parseOutputFormat(undefined, HUB_OUTPUT_FORMATS)).toBe('table');
    expect(parseOutputFormat('wide', LISTING_OUTPUT_FORMATS)).toBe('wide');
  });

  it('refuses anything else naming the accepted values, in the order given', () => {
    expect(() => parseOutputFormat('xml', LISTING_OUTPUT_FORMATS)).toThrow(
      new UsageError("-o must be table, wide, json or yaml, not 'xml'"),
    );
    // The offline commands' message, CLI.md's contract, is unchanged.
    expect(() => parseOutputFormat('wide', ['json', 'yaml', 'table'])).toThrow(
      new UsageError("-o must be json, yaml or table, not 'wide'"),
    );
  });
});

describe('parseHubOutputFormat', () => {
  const listings = ['clusters', 'clusters list'];
  it('gives a listing wide', () => {
    expect(parseHubOutputFormat('wide', { command: 'clusters list', listing: true, listings })).toBe('wide');
  });

  it('refuses wide elsewhere naming the listings and what the command takes', () => {
    expect(() => parseHubOutputFormat('wide', { command: 'clusters get', listing: false, listings })).toThrow(
      new UsageError(
        '-o wide is for listings (flotilla clusters or flotilla clusters list); flotilla clusters get takes -o table, json or yaml',
      ),
    );
    expect(() => parseHubOutputFormat('wide', { command: 'sync', listing: false, listings: [] })).toThrow(
      new UsageError('-o wide is for listings; flotilla sync takes -o table, json or yaml'),
    );
    expect(() => parseHubOutputFormat('xml', { command: 'sync', listing: false, listings: [] })).toThrow(
      new UsageError("-o must be table, json or yaml, not 'xml'"),
    );
  });
});

describe('formatResult and columnsTable', () => {
  interface Row {
    name: string;
    sha: string;
  }
  const columns: Column<Row>[] = [
    { header: 'NAME', cell: (r) => r.name },
    { header: 'REVISION', cell: (r, wide) => (wide ? r.sha : r.sha.slice(0, 7)) },
    { header: 'SHA LENGTH', cell: (r) => String(r.sha.length), wide: true },
  ];
  const rows: Row[] = [{ name: 'web', sha: '0123456789abcdef0123456789abcdef01234567' }];
  const table = (wide: boolean) => columnsTable(columns, rows, wide);

  it('prints the table without the wide columns, and the wide table with them and whole cells', () => {
    expect(formatResult(rows, 'table', table)).toBe('NAME   REVISION\nweb    0123456\n');
    expect(formatResult(rows, 'wide', table)).toBe(
      [
        'NAME   REVISION                                   SHA LENGTH',
        'web    0123456789abcdef0123456789abcdef01234567   40',
        '',
      ].join('\n'),
    );
  });

  it('prints the same JSON and YAML whatever the table', () => {
    expect(formatResult(rows, 'json', table)).toBe(`${JSON.stringify(rows)}\n`);
    expect(formatResult(rows, 'yaml', table)).toBe(
      '- name: web\n  sha: 0123456789abcdef0123456789abcdef01234567\n',
    );
  });
});
