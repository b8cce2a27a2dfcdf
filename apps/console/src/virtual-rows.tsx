import { useVirtualizer, type VirtualItem } from '@tanstack/react-virtual';
import { useCallback, useRef, type ReactNode } from 'react';

/**
 * A long table with only the rows in sight (and a few either side) in the DOM, so a thousand
 * clusters scroll as smoothly as ten. TanStack Virtual decides which rows those are from the scroll
 * position and measures each row as it renders (rows differ in height: labels and reasons wrap);
 * two spacer rows stand in for the rest and keep the scrollbar true. The rows stay real table rows,
 * with `aria-rowcount`/`aria-rowindex` telling assistive technology where they sit in the whole.
 */
export function useVirtualRows(count: number, estimatedRowHeight: number) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => estimatedRowHeight,
    overscan: 6,
  });
  const items = virtualizer.getVirtualItems();
  const toTop = useCallback(() => virtualizer.scrollToOffset(0), [virtualizer]);
  return {
    scrollRef,
    items,
    /** Pass as the `ref` of each row, with `data-index` set: the row's measured height is kept. */
    measureRow: virtualizer.measureElement,
    before: items[0]?.start ?? 0,
    after: Math.max(0, virtualizer.getTotalSize() - (items.at(-1)?.end ?? 0)),
    /** Back to the first row (a new filter shows a new list). */
    toTop,
  };
}

/** The scrolled box of a virtual table: it takes keyboard focus, so arrows and Page Down scroll it. */
export function VirtualTableBox({
  label,
  rows,
  children,
  className,
}: {
  label: string;
  rows: ReturnType<typeof useVirtualRows>;
  children: ReactNode;
  className?: string;
}) {
  return (
    <div
      className={`virtual-scroll ${className ?? ''}`}
      ref={rows.scrollRef}
      tabIndex={0}
      role="region"
      aria-label={label}
    >
      {children}
    </div>
  );
}

/** The rows not drawn above or below those in sight, as one empty row of their height. */
export function SpacerRow({ height, columns }: { height: number; columns: number }) {
  if (height <= 0) return null;
  return (
    <tr aria-hidden="true" className="spacer">
      <td colSpan={columns} style={{ height }} />
    </tr>
  );
}

/** The pages of `pageSize` rows the rows in sight belong to (the first page before any is known). */
export function pagesInSight(items: VirtualItem[], pageSize: number): number[] {
  if (items.length === 0) return [0];
  const first = Math.floor(items[0]!.index / pageSize);
  const last = Math.floor(items.at(-1)!.index / pageSize);
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
}

/**
 * A whole list in one virtual table (a list the hub answers in one piece, such as an appset's
 * generated targets): `row` draws one item as a `<tr>` given the props that place it.
 */
export function VirtualTable<T>({
  label,
  items,
  head,
  columns,
  estimatedRowHeight = 36,
  row,
}: {
  label: string;
  items: readonly T[];
  head: ReactNode;
  columns: number;
  estimatedRowHeight?: number;
  row: (item: T, place: RowPlace) => ReactNode;
}) {
  const rows = useVirtualRows(items.length, estimatedRowHeight);
  return (
    <VirtualTableBox label={label} rows={rows}>
      <table aria-rowcount={items.length + 1}>
        <caption className="sr-only">{label}</caption>
        <thead>{head}</thead>
        <tbody>
          <SpacerRow height={rows.before} columns={columns} />
          {rows.items.map((v) =>
            row(items[v.index]!, {
              ref: rows.measureRow,
              'data-index': v.index,
              'aria-rowindex': v.index + 2,
            }),
          )}
          <SpacerRow height={rows.after} columns={columns} />
        </tbody>
      </table>
    </VirtualTableBox>
  );
}

/** Spread onto a virtual table's `<tr>`: where it sits, and the measuring ref. */
export interface RowPlace {
  ref: (element: HTMLTableRowElement | null) => void;
  'data-index': number;
  'aria-rowindex': number;
}
