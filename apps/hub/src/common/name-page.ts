import { LISTING_PAGE } from '@flotilla/contract';
import { z } from 'zod';
import { applyDecorators } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import { HubError, parseInput } from './hub-error.js';

/**
 * Keyset pages over a listing ordered by a unique key — its `name` for most (hence this module's
 * name), see PageKey: the cursor is the last key shown (base64url, so it is opaque and any name
 * survives a query string), and a page is the keys after it. Pages never skip or repeat an item,
 * whatever is added or removed between them.
 */
export const pageQueryFields = {
  limit: z.coerce.number().int().min(1).max(LISTING_PAGE.max).optional(),
  cursor: z
    .string()
    .min(1)
    .refine((c) => decodeCursor(c) !== null, 'a cursor is the nextCursor of a previous page')
    .optional(),
};

export interface PageQuery {
  limit?: number | undefined;
  cursor?: string | undefined;
}

/**
 * Paged when the caller asked for pages (`limit` or `cursor`): then `{items, nextCursor}`. Without
 * either, the listing answers the plain array older clients read.
 */
export function isPaged(q: PageQuery): boolean {
  return q.limit !== undefined || q.cursor !== undefined;
}

/**
 * The key a listing is paged by: a unique field, in the listing's order (`name` ascending for most;
 * a repository's `url`, a break-glass's numeric `id` newest first, …). The cursor is the last key
 * shown, so a page is the keys after it in that order.
 */
export interface PageKey<R> {
  field: string;
  order: 'asc' | 'desc';
  of: (row: R) => string | number;
  /** The key is an integer: a cursor that is not one is refused. */
  numeric?: boolean;
}

const BY_NAME: PageKey<{ name: string }> = { field: 'name', order: 'asc', of: (r) => r.name };

/** Prisma arguments of one page: the names after the cursor, one more than asked (is there a next?). */
export function pageArgs(q: PageQuery): { where: { name?: { gt: string } }; take: number } {
  return keyPageArgs(q, BY_NAME);
}

/** The rows to show of those read with `pageArgs` (in name order), and the cursor of the next page. */
export function pageOf<R extends { name: string }>(
  rows: R[],
  q: PageQuery,
): { rows: R[]; nextCursor: string | null } {
  return keyPageOf(rows, q, BY_NAME);
}

/**
 * `pageArgs` for any page key: `where` (the keys after the cursor), `orderBy` and `take` (one more
 * than asked). A numeric key's cursor holds its decimal digits.
 */
export function keyPageArgs<R>(
  q: PageQuery,
  key: PageKey<R>,
): {
  where: Record<string, { gt?: string | number; lt?: string | number }>;
  orderBy: Record<string, 'asc' | 'desc'>;
  take: number;
} {
  const after = q.cursor === undefined ? null : decodeCursor(q.cursor);
  let value: string | number | null = after;
  if (after !== null && key.numeric) {
    if (!/^\d{1,15}$/.test(after))
      throw new HubError(
        400,
        'invalid-request',
        'invalid query: cursor: a cursor is the nextCursor of a previous page',
        'cursor',
      );
    value = Number(after);
  }
  return {
    where: value === null ? {} : { [key.field]: key.order === 'asc' ? { gt: value } : { lt: value } },
    orderBy: { [key.field]: key.order },
    take: (q.limit ?? LISTING_PAGE.default) + 1,
  };
}

/** `pageOf` for any page key. */
export function keyPageOf<R>(
  rows: R[],
  q: PageQuery,
  key: PageKey<R>,
): { rows: R[]; nextCursor: string | null } {
  const limit = q.limit ?? LISTING_PAGE.default;
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  return {
    rows: shown,
    nextCursor:
      rows.length > limit && last !== undefined
        ? Buffer.from(String(key.of(last)), 'utf8').toString('base64url')
        : null,
  };
}

function decodeCursor(cursor: string): string | null {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const name = Buffer.from(cursor, 'base64url').toString('utf8');
  return name.length > 0 && Buffer.from(name, 'utf8').toString('base64url') === cursor ? name : null;
}

/** The query of a plain paged listing (`limit`, `cursor`), refused with its field when wrong. */
export function parsePageQuery(query: unknown): PageQuery {
  return parseInput(z.object(pageQueryFields), query, 'query');
}

/** OpenAPI for a paged listing's `limit` and `cursor`. */
export function ApiPageQuery(): MethodDecorator {
  return applyDecorators(
    ApiQuery({ name: 'limit', required: false, description: `1–${LISTING_PAGE.max}; asks for one page` }),
    ApiQuery({ name: 'cursor', required: false, description: 'the nextCursor of the previous page' }),
  );
}
