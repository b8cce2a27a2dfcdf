import { stringify } from 'yaml';
import { UsageError } from '../usage-error.js';
import { type OptionValue } from './parse-options.js';

/**
 * The one place that decides what `-o` may be and how a result is printed in each format. Every
 * command prints `table` (for people), `json` (one document) or `yaml`; a listing also prints
 * `wide`, its table with the columns a person looks for when debugging (`kubectl get -o wide`).
 * The offline commands of CLI.md keep their own order of the accepted values in their message.
 */

/** What every command prints. */
export type OutputFormat = 'json' | 'yaml' | 'table';

/** What a listing prints: the formats of every command and `wide`. */
export type ListingFormat = OutputFormat | 'wide';

/** The accepted values in the order a hub-backed command names them. */
export const HUB_OUTPUT_FORMATS: readonly OutputFormat[] = ['table', 'json', 'yaml'];
export const LISTING_OUTPUT_FORMATS: readonly ListingFormat[] = ['table', 'wide', 'json', 'yaml'];

/** `a, b or c`. */
function either(values: readonly string[]): string {
  return values.length < 2 ? values.join('') : `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;
}

/**
 * `-o`'s value, one of `accepted` (the default `table` when not given); anything else is a usage
 * error naming the accepted values.
 */
export function parseOutputFormat<F extends ListingFormat>(raw: OptionValue, accepted: readonly F[]): F {
  // -o is a single-valued option: the parser hands over one value, never an array.
  const value = (Array.isArray(raw) ? raw.at(-1) : raw) ?? 'table';
  if (!(accepted as readonly unknown[]).includes(value))
    throw new UsageError(`-o must be ${either(accepted)}, not '${String(value)}'`);
  return value as F;
}

/**
 * `-o` of a hub-backed command: `wide` too when what is asked is a listing (`listings` names them,
 * e.g. `flotilla clusters list`), refused elsewhere with the listings that take it.
 */
export function parseHubOutputFormat(
  raw: OptionValue,
  where: { command: string; listing: boolean; listings: readonly string[] },
): ListingFormat {
  if (where.listing) return parseOutputFormat(raw, LISTING_OUTPUT_FORMATS);
  if (raw === 'wide') {
    const listings = where.listings.map((l) => `flotilla ${l}`);
    throw new UsageError(
      `-o wide is for listings${listings.length ? ` (${either(listings)})` : ''}; flotilla ${where.command} takes -o ${either(HUB_OUTPUT_FORMATS)}`,
    );
  }
  return parseOutputFormat(raw, HUB_OUTPUT_FORMATS);
}

/**
 * What printResult prints: one line of JSON, a YAML document, or the table (ending with a newline).
 * `table` is told whether the wide table is wanted; a command that lists nothing never gets `wide`.
 */
export function formatResult(
  value: unknown,
  output: ListingFormat,
  table: (wide: boolean) => string,
): string {
  switch (output) {
    case 'json':
      return `${JSON.stringify(value)}\n`;
    case 'yaml':
      return stringify(value);
    case 'table':
    case 'wide': {
      const text = table(output === 'wide');
      if (!text) return '';
      return text.endsWith('\n') ? text : `${text}\n`;
    }
  }
}

/** Prints `value` as one JSON or YAML document, or as the table the command builds for people. */
export function printResult(value: unknown, output: ListingFormat, table: (wide: boolean) => string): void {
  process.stdout.write(formatResult(value, output, table));
}

/** One column of a listing; `wide` columns are shown with `-o wide` only. */
export interface Column<T> {
  header: string;
  /** The cell; `wide` is true under `-o wide`, where a cell may say more (a whole commit sha). */
  cell: (row: T, wide: boolean) => string;
  wide?: true;
}

/** The rows under their columns: the wide ones only when `wide`. */
export function columnsTable<T>(columns: readonly Column<T>[], rows: readonly T[], wide: boolean): string {
  const shown = columns.filter((c) => wide || !c.wide);
  return formatTable(
    shown.map((c) => c.header),
    rows.map((row) => shown.map((c) => c.cell(row, wide))),
  );
}

/** Aligned columns separated by three spaces, like kubectl; the last column is not padded. */
export function formatTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('   ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}
