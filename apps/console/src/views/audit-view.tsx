import type { AuditPageView, AuditVerifyView } from '@flotilla/contract';
import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import { get } from '../api.js';
import { ExportButtons } from '../export-buttons.js';
import { FilterForm, type FilterField } from '../filter-form.js';
import { ErrorNote, Pager, When } from '../parts.js';
import { useUrlFilters, withIsoTimes } from '../url-filters.js';

const KEYS = ['actor', 'scope', 'scopePrefix', 'action', 'outcome', 'from', 'to'] as const;
type Key = (typeof KEYS)[number];
const FIELDS: FilterField<Key>[] = [
  { key: 'actor', label: 'Actor' },
  { key: 'scope', label: 'Scope', hint: 'exact, e.g. target:web-eu1' },
  { key: 'scopePrefix', label: 'Scope prefix', hint: 'e.g. cluster:' },
  { key: 'action', label: 'Action prefix', hint: 'e.g. sync.' },
  { key: 'outcome', label: 'Outcome' },
  { key: 'from', label: 'From', type: 'datetime-local' },
  { key: 'to', label: 'To', type: 'datetime-local' },
];

export function AuditView() {
  const [filters, cursors, setFilters] = useUrlFilters('/audit', KEYS);
  const cursor = cursors.at(-1);
  const events = useQuery({
    queryKey: ['audit', filters, cursor ?? null],
    queryFn: () =>
      get<AuditPageView>('/api/v1/audit', {
        ...withIsoTimes(filters),
        cursor,
        limit: 50,
      }),
    placeholderData: keepPreviousData,
  });
  const verify = useMutation({ mutationFn: () => get<AuditVerifyView>('/api/v1/audit/verify') });
  return (
    <>
      <h1>Audit log</h1>
      <FilterForm
        label="Filter the audit log"
        fields={FIELDS}
        values={filters}
        onApply={(f) => setFilters(f)}
      />
      <div className="actions">
        <ExportButtons path="/api/v1/audit" params={withIsoTimes(filters)} name="audit" />
        <button
          type="button"
          onClick={() => !verify.isPending && verify.mutate()}
          aria-disabled={verify.isPending}
        >
          Verify the chain
        </button>
      </div>
      <ErrorNote error={verify.error} />
      {verify.data && (
        <p role="status" className={verify.data.valid ? 'ok-note' : 'error'}>
          {verify.data.valid
            ? `Chain verified: ${verify.data.checked} events checked since the last verification, none altered${fullPassNote(verify.data)}.`
            : `Chain broken: ${verify.data.checked} events checked, ${verify.data.unchained} unchained; first break at ${JSON.stringify(verify.data.firstBrokenAt)}.`}
        </p>
      )}
      <ErrorNote error={events.error} />
      {events.data && (
        <>
          <div className="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">At</th>
                  <th scope="col">Actor</th>
                  <th scope="col">Action</th>
                  <th scope="col">Scope</th>
                  <th scope="col">Details</th>
                </tr>
              </thead>
              <tbody>
                {events.data.items.map((e) => (
                  <tr key={e.id}>
                    <td>
                      <When at={e.at} />
                    </td>
                    <td>{e.actor}</td>
                    <td>{e.action}</td>
                    <td>{e.scope}</td>
                    <td className="message">
                      <code>{JSON.stringify(e.details)}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager cursors={cursors} next={events.data.nextCursor} onChange={(c) => setFilters(filters, c)} />
        </>
      )}
    </>
  );
}

/** Incremental checks read only new events: when the whole chain was last reread says how far that goes. */
function fullPassNote(r: AuditVerifyView): string {
  const pass = r.lastFullPass;
  return pass ? `; last full check ${pass.finishedAt} (${pass.checked} events)` : '';
}
