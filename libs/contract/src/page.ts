/**
 * One page of a listing, the same shape everywhere (audit, sync runs, and every inventory listing
 * asked with `limit` or `cursor`): pass `nextCursor` back as `cursor` for the next page; null = last.
 */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** The page sizes of inventory listings: `limit` defaults to this many, and may not exceed the max. */
export const LISTING_PAGE = { default: 100, max: 500 } as const;
