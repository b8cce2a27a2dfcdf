import {
  SYNC_OUTCOMES,
  SYNC_TRIGGERS,
  csvField,
  type SyncRunPageView,
  type SyncRunView,
} from '@flotilla/contract';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { get, saveBlob } from '../api.js';
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

/** The export reads page after page from the hub, up to this many runs (a bound, not a snapshot). */
const EXPORT_MAX = 10_000;
const CSV_COLUMNS = [
  'id',
  'startedAt',
  'finishedAt',
  'target',
  'cluster',
  'appSet',
  'trigger',
  'outcome',
  'revision',
  'bundleDigest',
  'message',
  'reportId',
] as const;

async function exportRuns(f: Record<Key, string>, format: 'csv' | 'ndjson'): Promise<number> {
  const runs: SyncRunView[] = [];
  let cursor: string | undefined;
  do {
    const page = await get<SyncRunPageView>('/api/v1/sync-runs', { ...withIsoTimes(f), limit: 500, cursor });
    runs.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor && runs.length < EXPORT_MAX);
  const rows = runs.slice(0, EXPORT_MAX);
  const text =
    format === 'csv'
      ? [
          CSV_COLUMNS.join(','),
          ...rows.map((r) => CSV_COLUMNS.map((c) => csvField(String(r[c]))).join(',')),
        ].join('\r\n') + '\r\n'
      : rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
  saveBlob(
    new Blob([text], { type: format === 'csv' ? 'text/csv' : 'application/x-ndjson' }),
    `sync-runs.${format}`,
  );
  return rows.length;
}

export function HistoryView() {
  const [filters, cursors, setFilters] = useUrlFilters('/history', KEYS);
  const cursor = cursors.at(-1);
  const runs = useQuery({
    queryKey: ['history', filters, cursor ?? null],
    queryFn: () => get<SyncRunPageView>('/api/v1/sync-runs', { ...withIsoTimes(filters), cursor, limit: 50 }),
    placeholderData: keepPreviousData,
  });
  const [exported, setExported] = useState<string | null>(null);
  const [exportError, setExportError] = useState<unknown>(null);
  const doExport = (format: 'csv' | 'ndjson') => {
    setExportError(null);
    exportRuns(filters, format).then(
      (n) =>
        setExported(
          `Exported ${n} runs as ${format.toUpperCase()}${n >= EXPORT_MAX ? ' (the first 10,000)' : ''}.`,
        ),
      setExportError,
    );
  };
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
        <button type="button" onClick={() => doExport('csv')}>
          Export CSV
        </button>
        <button type="button" onClick={() => doExport('ndjson')}>
          Export NDJSON
        </button>
      </div>
      {exported && <p role="status">{exported}</p>}
      <ErrorNote error={exportError} />
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
