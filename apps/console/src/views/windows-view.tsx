import type { SyncWindowView } from '@flotilla/contract';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { api, get } from '../api.js';
import { ErrorNote, Field } from '../parts.js';
import { ReasonForm } from '../reason-form.js';
import { useCan } from '../session.js';
import { WindowCalendar } from './window-calendar.js';

const list = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

const BLANK = {
  name: '',
  kind: 'deny' as 'allow' | 'deny',
  schedule: '0 22 * * *',
  duration: '8h',
  timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
  clusters: '',
  applications: '',
  namespaces: '',
  manualSync: false,
  reason: '',
};

type WindowDraft = typeof BLANK;

function draftOf(w: SyncWindowView): WindowDraft {
  return {
    name: w.name,
    kind: w.kind,
    schedule: w.schedule,
    duration: w.duration,
    timeZone: w.timeZone,
    clusters: w.clusters.join(', '),
    applications: w.applications.join(', '),
    namespaces: w.namespaces.join(', '),
    manualSync: w.manualSync,
    reason: '',
  };
}

/**
 * Adds a window, or (given `editing`) replaces one with a new version under the same name: a PUT
 * of the whole window, keeping the fields this form does not show (projects, andOperator,
 * description). The hub refuses windows a fleet repository manages; their file is the place.
 */
function WindowForm({ editing, onDone }: { editing?: SyncWindowView; onDone?: () => void }) {
  const client = useQueryClient();
  const [w, setW] = useState<WindowDraft>(editing ? draftOf(editing) : BLANK);
  const form = useRef<HTMLFormElement>(null);
  // The edit form opens below the table, away from its Edit button: focus goes to its first field.
  useEffect(() => {
    if (editing) form.current?.querySelector<HTMLElement>('input, select')?.focus();
    // Once, as the form opens; a refetch of the same window must not pull focus back.
  }, []);
  const escape = (e: KeyboardEvent) => {
    if (e.key === 'Escape' && editing) onDone?.();
  };
  const save = useMutation({
    mutationFn: () => {
      const fields = {
        kind: w.kind,
        schedule: w.schedule,
        duration: w.duration,
        timeZone: w.timeZone,
        clusters: list(w.clusters),
        applications: list(w.applications),
        namespaces: list(w.namespaces),
        manualSync: w.manualSync,
        reason: w.reason,
      };
      return editing
        ? api<SyncWindowView>('PUT', `/api/v1/windows/${encodeURIComponent(editing.name)}`, {
            ...fields,
            projects: editing.projects,
            andOperator: editing.andOperator,
            description: editing.description,
          })
        : api<SyncWindowView>('POST', '/api/v1/windows', { name: w.name, ...fields });
    },
    onSuccess: () => {
      if (!editing) setW(BLANK);
      void client.invalidateQueries({ queryKey: ['windows'] });
      void client.invalidateQueries({ queryKey: ['fleet'] });
      onDone?.();
    },
  });
  const text = (k: keyof WindowDraft, label: string, hint?: string) => (
    <Field label={label} hint={hint}>
      {(id, hintId) => (
        <input
          id={id}
          aria-describedby={hintId}
          value={String(w[k])}
          onChange={(e) => setW({ ...w, [k]: e.target.value })}
        />
      )}
    </Field>
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!save.isPending) save.mutate();
  };
  return (
    <form
      ref={form}
      className="filters"
      onSubmit={submit}
      onKeyDown={escape}
      aria-label={editing ? `Edit sync window ${editing.name}` : 'Add a sync window'}
    >
      {!editing && text('name', 'Name', 'lower-case letters, digits and -')}
      <Field label="Kind">
        {(id) => (
          <select
            id={id}
            value={w.kind}
            onChange={(e) => setW({ ...w, kind: e.target.value as 'allow' | 'deny' })}
          >
            <option value="deny">deny</option>
            <option value="allow">allow</option>
          </select>
        )}
      </Field>
      {text('schedule', 'Schedule', 'cron, in the time zone below')}
      {text('duration', 'Duration', 'e.g. 8h, 90m')}
      {text('timeZone', 'Time zone', 'IANA, e.g. Europe/Berlin')}
      {text('clusters', 'Clusters', 'comma-separated names or globs; empty: all')}
      {text('applications', 'Applications', 'target names or globs')}
      {text('namespaces', 'Namespaces')}
      <label className="check">
        <input
          type="checkbox"
          checked={w.manualSync}
          onChange={(e) => setW({ ...w, manualSync: e.target.checked })}
        />{' '}
        Let manual syncs through
      </label>
      {text('reason', 'Reason', 'kept in the window history and audit log')}
      <div className="actions">
        <button type="submit" aria-disabled={save.isPending}>
          {editing ? 'Save window' : 'Add window'}
        </button>
        {editing && (
          <button type="button" onClick={onDone}>
            Cancel
          </button>
        )}
      </div>
      <ErrorNote error={save.error} />
    </form>
  );
}

export function WindowsView() {
  const canEdit = useCan('admin');
  const [editing, setEditing] = useState<string | null>(null);
  const editButtons = useRef(new Map<string, HTMLButtonElement>());
  const heading = useRef<HTMLHeadingElement>(null);
  // Saved, cancelled or escaped, the edit form goes away: focus goes back to the button that opened it.
  const stopEditing = (name: string) => {
    setEditing(null);
    editButtons.current.get(name)?.focus();
  };
  const windows = useQuery({
    queryKey: ['windows'],
    queryFn: () => get<SyncWindowView[]>('/api/v1/windows'),
  });
  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        Sync windows
      </h1>
      <p>
        Schedules are read in each window&apos;s own time zone (your browser is in{' '}
        {Intl.DateTimeFormat().resolvedOptions().timeZone}). Windows from a fleet repository change in Git;
        the hub refuses edits to them here.
      </p>
      <ErrorNote error={windows.error} />
      {windows.data && windows.data.length === 0 && (
        <p>No sync windows: every target may sync at any time.</p>
      )}
      {windows.data && windows.data.length > 0 && (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Kind</th>
                <th scope="col">Schedule</th>
                <th scope="col">Duration</th>
                <th scope="col">Time zone</th>
                <th scope="col">Applies to</th>
                <th scope="col">Manual syncs</th>
                {canEdit && <th scope="col">Change</th>}
              </tr>
            </thead>
            <tbody>
              {windows.data.map((w) => (
                <tr key={w.name}>
                  <td>{w.name}</td>
                  <td>{w.kind}</td>
                  <td>
                    <code>{w.schedule}</code>
                  </td>
                  <td>{w.duration}</td>
                  <td>{w.timeZone}</td>
                  <td>
                    {[
                      w.clusters.length ? `clusters ${w.clusters.join(', ')}` : '',
                      w.applications.length ? `applications ${w.applications.join(', ')}` : '',
                      w.namespaces.length ? `namespaces ${w.namespaces.join(', ')}` : '',
                      w.projects.length ? `projects ${w.projects.join(', ')}` : '',
                    ]
                      .filter(Boolean)
                      .join('; ') || 'everything'}
                  </td>
                  <td>{w.manualSync ? 'allowed' : 'held'}</td>
                  {canEdit && (
                    <td>
                      <button
                        type="button"
                        aria-label={`Edit ${w.name}`}
                        aria-expanded={editing === w.name}
                        ref={(el) => {
                          if (el) editButtons.current.set(w.name, el);
                          else editButtons.current.delete(w.name);
                        }}
                        onClick={() => (editing === w.name ? stopEditing(w.name) : setEditing(w.name))}
                      >
                        Edit
                      </button>
                      <ReasonForm
                        label={`Remove window ${w.name}`}
                        fieldLabel={`Reason to remove ${w.name}`}
                        button="Remove"
                        action={(reason) =>
                          api<void>(
                            'DELETE',
                            `/api/v1/windows/${encodeURIComponent(w.name)}?${new URLSearchParams({ reason })}`,
                          )
                        }
                        changes={[['windows'], ['fleet']]}
                        // The row goes away with the window: focus goes to the view's heading.
                        onDone={() => heading.current?.focus()}
                      />
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {canEdit &&
        windows.data
          ?.filter((w) => w.name === editing)
          .map((w) => (
            <section aria-labelledby="edit-window" key={`${w.name}@${w.version}`}>
              <h2 id="edit-window">Edit {w.name}</h2>
              <WindowForm editing={w} onDone={() => stopEditing(w.name)} />
            </section>
          ))}
      {windows.data && windows.data.length > 0 && (
        <section aria-labelledby="week">
          <h2 id="week">This week</h2>
          <WindowCalendar windows={windows.data} />
        </section>
      )}
      {canEdit && (
        <section aria-labelledby="add-window">
          <h2 id="add-window">Add a window</h2>
          <WindowForm />
        </section>
      )}
    </>
  );
}
