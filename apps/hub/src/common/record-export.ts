import { Readable } from 'node:stream';
import { StreamableFile } from '@nestjs/common';

/**
 * Exports of records people query (audit events, sync runs): every match streamed a page at a
 * time as NDJSON or CSV, so an export of millions of rows never sits in the hub's memory.
 */
export type ExportFormat = 'ndjson' | 'csv';

/** The largest page an export reads at once (the API's own page limit). */
const EXPORT_PAGE = 500;

/** Every item of a keyset-paged query, at most `limit`, fetched a page at a time. */
export async function* everyItem<T>(
  page: (cursor: string | undefined, limit: number) => Promise<{ items: T[]; nextCursor: string | null }>,
  opts: { cursor?: string | undefined; limit?: number | undefined } = {},
): AsyncGenerator<T> {
  let remaining = opts.limit ?? Infinity;
  let cursor = opts.cursor;
  while (remaining > 0) {
    const p = await page(cursor, Math.min(remaining, EXPORT_PAGE));
    for (const item of p.items) yield item;
    remaining -= p.items.length;
    if (!p.nextCursor) return;
    cursor = p.nextCursor;
  }
}

/** The export body, produced as the items arrive: a CSV header and rows, or one JSON object a line. */
export async function* exportLines<T>(
  items: AsyncIterable<T> | Iterable<T>,
  format: ExportFormat,
  csv: { header: string; row: (item: T) => string },
): AsyncGenerator<string> {
  if (format === 'csv') yield csv.header;
  for await (const item of items) yield format === 'csv' ? csv.row(item) : `${JSON.stringify(item)}\n`;
}

/** The HTTP answer of an export: a download named `<name>.<format>`. */
export function exportFile(lines: AsyncIterable<string>, format: ExportFormat, name: string): StreamableFile {
  return new StreamableFile(Readable.from(lines), {
    type: format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson',
    disposition: `attachment; filename="${name}.${format}"`,
  });
}
