import { LISTING_PAGE } from '@flotilla/contract';
import { z } from 'zod';

/**
 * Keyset pages over a listing ordered by its unique `name`: the cursor is the last name shown
 * (base64url, so it is opaque and any name survives a query string), and a page is the names after
 * it. Pages never skip or repeat an item, whatever is added or removed between them.
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

/** Prisma arguments of one page: the names after the cursor, one more than asked (is there a next?). */
export function pageArgs(q: PageQuery): { where: { name?: { gt: string } }; take: number } {
  const after = q.cursor === undefined ? null : decodeCursor(q.cursor);
  return {
    where: after === null ? {} : { name: { gt: after } },
    take: (q.limit ?? LISTING_PAGE.default) + 1,
  };
}

/** The rows to show of those read with `pageArgs` (in name order), and the cursor of the next page. */
export function pageOf<R extends { name: string }>(
  rows: R[],
  q: PageQuery,
): { rows: R[]; nextCursor: string | null } {
  const limit = q.limit ?? LISTING_PAGE.default;
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  return {
    rows: shown,
    nextCursor: rows.length > limit && last ? Buffer.from(last.name, 'utf8').toString('base64url') : null,
  };
}

function decodeCursor(cursor: string): string | null {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const name = Buffer.from(cursor, 'base64url').toString('utf8');
  return name.length > 0 && Buffer.from(name, 'utf8').toString('base64url') === cursor ? name : null;
}
