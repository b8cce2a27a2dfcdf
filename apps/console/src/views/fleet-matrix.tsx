import {
  FLEET_STATUS_FILTERS,
  type FleetCellView,
  type FleetRowView,
  type FleetView,
} from '@flotilla/contract';
import { memo } from 'react';
import { keepPreviousData, useQuery, type QueryClient } from '@tanstack/react-query';
import { Link } from 'wouter';
import { get } from '../api.js';
import { shortRevision } from '../format.js';
import { FilterForm, type FilterField } from '../filter-form.js';
import { ErrorNote, Pager, Reason, Status, When } from '../parts.js';
import { useUrlFilters } from '../url-filters.js';

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
const MatrixRow = memo(function MatrixRow({ row, appSets }: { row: FleetRowView; appSets: string[] }) {
  return (
    <tr className={row.online ? undefined : 'offline'}>
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

type Filters = Record<(typeof FILTERS)[number], string>;

function fleetQuery(filters: Filters, cursor: string | undefined) {
  return {
    queryKey: ['fleet', filters, cursor ?? null],
    queryFn: () => get<FleetView>('/api/v1/fleet', { ...filters, cursor, limit: 50 }),
  };
}

/**
 * Asks for the matrix page the address names as the console starts, alongside the session, instead
 * of after it: the first page is what people wait for. Same key as the view's, so the view finds it.
 */
export function prefetchFleetPage(client: QueryClient): void {
  if (location.pathname !== '/') return;
  const search = new URLSearchParams(location.search);
  const filters = Object.fromEntries(FILTERS.map((k) => [k, search.get(k) ?? ''])) as Filters;
  void client.prefetchQuery(fleetQuery(filters, search.getAll('page').at(-1)));
}

export function FleetMatrix() {
  const [filters, cursors, setFilters] = useUrlFilters('/', FILTERS);
  const fleet = useQuery({ ...fleetQuery(filters, cursors.at(-1)), placeholderData: keepPreviousData });
  const data = fleet.data;
  return (
    <>
      <h1>Fleet</h1>
      <FilterForm label="Filter the fleet" fields={FIELDS} values={filters} onApply={(f) => setFilters(f)} />
      <ErrorNote error={fleet.error} />
      {data && (
        <>
          <p className="counts" aria-live="polite" data-testid="fleet-counts">
            {data.counts.clusters} clusters ({data.counts.offlineClusters} offline) · {data.counts.targets}{' '}
            targets · {data.counts.sync.Synced} Synced, {data.counts.sync.OutOfSync} OutOfSync ·{' '}
            {data.counts.health.Healthy} Healthy, {data.counts.health.Degraded} Degraded,{' '}
            {data.counts.health.Progressing} Progressing
          </p>
          {data.rows.length === 0 ? (
            <p>No cluster matches these filters.</p>
          ) : (
            <div className="table-wrap">
              <table className="matrix">
                <caption className="sr-only">Clusters by ApplicationSet</caption>
                <thead>
                  <tr>
                    <th scope="col">Cluster</th>
                    {data.appSets.map((a) => (
                      <th scope="col" key={a}>
                        <Link href={`/appsets/${encodeURIComponent(a)}`}>{a}</Link>
                      </th>
                    ))}
                  </tr>
                </thead>
                <tbody>
                  {data.rows.map((row) => (
                    <MatrixRow key={row.cluster} row={row} appSets={data.appSets} />
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <Pager cursors={cursors} next={data.nextCursor} onChange={(c) => setFilters(filters, c)} />
        </>
      )}
    </>
  );
}
