import { SYNC_OUTCOMES, SYNC_TRIGGERS, type SyncRunPageView } from '@flotilla/contract';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { get } from '../api.js';
import { ExportButtons } from '../export-buttons.js';
import { FilterForm, type FilterField } from '../filter-form.js';
import { ErrorNote, Pager } from '../parts.js';
import { RunsTable } from '../runs-table.js';
import { useUrlFilters, withIsoTimes } from '../url-filters.js';

const KEYS = ['target', 'cluster', 'appSet', 'outcome', 'trigger', 'from', 'to'] as const;
type Key = (typeof KEYS)[number];
const FIELDS: FilterField<Key>[] = [
  { key: 'target', label: 'Target' },
  { key: 'cluster', label: 'Cluster' },
  { key: 'appSet', label: 'ApplicationSet' },
  { key: 'outcome', label: 'Outcome', options: SYNC_OUTCOMES },
  { key: 'trigger', label: 'Trigger', options: SYNC_TRIGGERS },
  { key: 'from', label: 'From', type: 'datetime-local' },
  { key: 'to', label: 'To', type: 'datetime-local' },
];

export function HistoryView() {
  const [filters, cursors, setFilters] = useUrlFilters('/history', KEYS);
  const cursor = cursors.at(-1);
  const runs = useQuery({
    queryKey: ['history', filters, cursor ?? null],
    queryFn: () => get<SyncRunPageView>('/api/v1/sync-runs', { ...withIsoTimes(filters), cursor, limit: 50 }),
    placeholderData: keepPreviousData,
  });
  return (
    <>
      <h1>Sync history</h1>
      <FilterForm
        label="Filter the history"
        fields={FIELDS}
        values={filters}
        onApply={(f) => setFilters(f)}
      />
      <div className="actions">
        <ExportButtons path="/api/v1/sync-runs" params={withIsoTimes(filters)} name="sync-runs" />
      </div>
      <ErrorNote error={runs.error} />
      {runs.data && (
        <>
          <RunsTable runs={runs.data.items} />
          <Pager cursors={cursors} next={runs.data.nextCursor} onChange={(c) => setFilters(filters, c)} />
        </>
      )}
    </>
  );
}
