import {
  FLEET_STATUS_FILTERS,
  type FleetCellView,
  type FleetRowView,
  type FleetView,
} from '@flotilla/contract';
import { memo, useEffect, useState } from 'react';
import { useQueries, type QueryClient } from '@tanstack/react-query';
import { Link } from 'wouter';
import { get } from '../api.js';
import { shortRevision } from '../format.js';
import { FilterForm, type FilterField } from '../filter-form.js';
import { ErrorNote, Reason, Status, When } from '../parts.js';
import { useUrlFilters } from '../url-filters.js';
import { pagesInSight, SpacerRow, useVirtualRows, VirtualTableBox, type RowPlace } from '../virtual-rows.js';

const FILTERS = ['selector', 'appSet', 'project', 'status', 'q'] as const;
const FIELDS: FilterField<(typeof FILTERS)[number]>[] = [
  { key: 'selector', label: 'Cluster labels', hint: 'e.g. env=prod,region in (eu,us)' },
  { key: 'appSet', label: 'ApplicationSet' },
  { key: 'project', label: 'Project' },
  { key: 'status', label: 'Status', options: FLEET_STATUS_FILTERS },
  { key: 'q', label: 'Text', hint: 'in a cluster, target or appset name' },
];

function Cell({ cell }: { cell: FleetCellView | undefined }) {
  if (!cell) return <td className="empty">—</td>;
  return (
    <td className="cell">
      <Link href={`/targets/${encodeURIComponent(cell.target)}`} className="cell-link">
        <span className="sr-only">{cell.target}: </span>
        <Status value={cell.syncStatus} /> <Status value={cell.health} />{' '}
        {/* What runs, and where Git wants it to go when that differs. */}
        {cell.lastSyncedRevision && <code>{shortRevision(cell.lastSyncedRevision)}</code>}
        {cell.lastSyncedRevision !== cell.desiredRevision && (
          <>
            {cell.lastSyncedRevision ? ' → ' : ''}
            <code title="the revision Git wants">{shortRevision(cell.desiredRevision)}</code>
          </>
        )}
      </Link>
      {!cell.automated && <span className="tag">manual</span>}
      {/* An offline agent's last report, not what runs now (older hubs send no stale). */}
      {cell.stale === true && (
        <span className="tag" title="the cluster's agent is offline: this is its last report">
          stale
        </span>
      )}
      <Reason reason={cell.reason} />
    </td>
  );
}

/**
 * One cluster's row. TanStack Query keeps unchanged parts of a refetched page the same objects, so
 * while changes stream in only the rows that changed render again.
 */
const MatrixRow = memo(function MatrixRow({
  row,
  appSets,
  index,
  measureRow,
}: {
  row: FleetRowView;
  appSets: string[];
  index: number;
  measureRow: RowPlace['ref'];
}) {
  return (
    <tr
      className={row.online ? undefined : 'offline'}
      ref={measureRow}
      data-index={index}
      aria-rowindex={index + 2}
    >
      <th scope="row">
        <span className="cluster-name">{row.cluster}</span>
        {!row.online && (
          <span className="offline-note">
            <Status value="Offline" /> last seen <When at={row.lastSeenAt} />
          </span>
        )}
        <span className="labels">
          {Object.entries(row.labels).map(([k, v]) => (
            <span className="label" key={k}>
              {k}={v}
            </span>
          ))}
        </span>
      </th>
      {appSets.map((a) => (
        <Cell key={a} cell={row.cells.find((c) => c.appSet === a)} />
      ))}
    </tr>
  );
});

/** A row scrolled into sight before its page has arrived. */
function PendingRow({ columns, place }: { columns: number; place: RowPlace }) {
  return (
    <tr className="pending" {...place}>
      <td colSpan={columns}>Loading…</td>
    </tr>
  );
}

type Filters = Record<(typeof FILTERS)[number], string>;

/** Rows the hub answers at a time, as the person scrolls; and a row's height before it is measured. */
const PAGE_ROWS = 50;
const ROW_HEIGHT = 110;

function fleetQuery(filters: Filters, offset: number) {
  return {
    queryKey: ['fleet', filters, offset],
    queryFn: () =>
      get<FleetView>('/api/v1/fleet', { ...filters, offset: offset || undefined, limit: PAGE_ROWS }),
  };
}

/**
 * Asks for the matrix's first rows as the console starts, alongside the session, instead of after
 * it: the first page is what people wait for. Same key as the view's, so the view finds it.
 */
export function prefetchFleetPage(client: QueryClient): void {
  if (location.pathname !== '/') return;
  const search = new URLSearchParams(location.search);
  const filters = Object.fromEntries(FILTERS.map((k) => [k, search.get(k) ?? ''])) as Filters;
  void client.prefetchQuery(fleetQuery(filters, 0));
}

/**
 * The whole matching fleet as one scrolled table, one row per cluster. The hub answers 50 rows at a
 * time by offset; only the pages of the rows in sight are asked for (and refetched on live events),
 * and only those rows are in the DOM. Every answer carries the counts and columns of all matches.
 */
export function FleetMatrix() {
  const [filters, , setFilters] = useUrlFilters('/', FILTERS);
  /** The newest answer: counts, columns and how many rows the scrolled table has. */
  const [summary, setSummary] = useState<FleetView | null>(null);
  const filterKey = JSON.stringify(filters);
  const total = summary?.counts.clusters ?? 0;
  const rows = useVirtualRows(total, ROW_HEIGHT);
  const pageNumbers = pagesInSight(rows.items, PAGE_ROWS);
  const pages = useQueries({ queries: pageNumbers.map((n) => fleetQuery(filters, n * PAGE_ROWS)) });
  const newest = pages.reduce<FleetView | undefined>(
    (m, q) => (q.data && (!m || q.data.at > m.at) ? q.data : m),
    undefined,
  );
  useEffect(() => {
    if (newest) setSummary(newest);
  }, [newest]);
  // A new filter is a new list: back to its first row.
  const { toTop } = rows;
  useEffect(() => toTop(), [filterKey, toTop]);

  const rowAt = (index: number): FleetRowView | undefined =>
    pages[pageNumbers.indexOf(Math.floor(index / PAGE_ROWS))]?.data?.rows[index % PAGE_ROWS];
  const data = summary;
  const columns = (data?.appSets.length ?? 0) + 1;
  return (
    <>
      <h1>Fleet</h1>
      <FilterForm label="Filter the fleet" fields={FIELDS} values={filters} onApply={(f) => setFilters(f)} />
      <ErrorNote error={pages.find((q) => q.error)?.error} />
      {data && (
        <>
          <p className="counts" aria-live="polite" data-testid="fleet-counts">
            {data.counts.clusters} clusters ({data.counts.offlineClusters} offline) · {data.counts.targets}{' '}
            targets · {data.counts.sync.Synced} Synced, {data.counts.sync.OutOfSync} OutOfSync ·{' '}
            {data.counts.health.Healthy} Healthy, {data.counts.health.Degraded} Degraded,{' '}
            {data.counts.health.Progressing} Progressing
          </p>
          {total === 0 && <p>No cluster matches these filters.</p>}
        </>
      )}
      {/* Kept mounted while a filter loads, so the scroll box (and its virtualizer) stays the same. */}
      <VirtualTableBox label="Fleet matrix" rows={rows} className={total === 0 ? 'hidden' : undefined}>
        {data && total > 0 && (
          <table className="matrix" aria-rowcount={total + 1}>
            <caption className="sr-only">Clusters by ApplicationSet</caption>
            <colgroup>
              <col className="cluster-col" />
              {data.appSets.map((a) => (
                <col key={a} className="appset-col" />
              ))}
            </colgroup>
            <thead>
              <tr aria-rowindex={1}>
                <th scope="col">Cluster</th>
                {data.appSets.map((a) => (
                  <th scope="col" key={a}>
                    <Link href={`/appsets/${encodeURIComponent(a)}`}>{a}</Link>
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              <SpacerRow height={rows.before} columns={columns} />
              {rows.items.map((v) => {
                const row = rowAt(v.index);
                return row ? (
                  <MatrixRow
                    key={row.cluster}
                    row={row}
                    appSets={data.appSets}
                    index={v.index}
                    measureRow={rows.measureRow}
                  />
                ) : (
                  <PendingRow
                    key={`pending-${v.index}`}
                    columns={columns}
                    place={{ ref: rows.measureRow, 'data-index': v.index, 'aria-rowindex': v.index + 2 }}
                  />
                );
              })}
              <SpacerRow height={rows.after} columns={columns} />
            </tbody>
          </table>
        )}
      </VirtualTableBox>
    </>
  );
}
