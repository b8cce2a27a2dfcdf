import {
  BREAK_GLASS_SCOPES,
  type BreakGlassRecordView,
  type BreakGlassScope,
  type BreakGlassView,
} from '@flotilla/contract';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, get } from '../api.js';
import { ErrorNote, Field, Status, When } from '../parts.js';
import { ReasonForm } from '../reason-form.js';
import { useCan } from '../session.js';

function OpenBreakGlass() {
  const client = useQueryClient();
  const [scope, setScope] = useState<BreakGlassScope>('cluster');
  const [name, setName] = useState('');
  const [reason, setReason] = useState('');
  const [minutes, setMinutes] = useState('60');
  const [allowSync, setAllowSync] = useState(true);
  const [pauseHeal, setPauseHeal] = useState(true);
  const open = useMutation({
    mutationFn: () =>
      api<BreakGlassView>('POST', '/api/v1/break-glass', {
        scope,
        name,
        reason,
        durationMinutes: Number(minutes),
        allowSyncOutsideWindows: allowSync,
        pauseSelfHeal: pauseHeal,
      }),
    onSuccess: () => {
      setReason('');
      void client.invalidateQueries({ queryKey: ['break-glass'] });
      void client.invalidateQueries({ queryKey: ['fleet'] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!open.isPending) open.mutate();
  };
  return (
    <form className="filters" onSubmit={submit} aria-label="Open a break-glass">
      <Field label="Scope">
        {(id) => (
          <select id={id} value={scope} onChange={(e) => setScope(e.target.value as BreakGlassScope)}>
            {BREAK_GLASS_SCOPES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field label="Name" hint="the cluster's, appset's or target's name">
        {(id, hint) => (
          <input
            id={id}
            aria-describedby={hint}
            required
            value={name}
            onChange={(e) => setName(e.target.value)}
          />
        )}
      </Field>
      <Field label="Incident reason">
        {(id) => <input id={id} required value={reason} onChange={(e) => setReason(e.target.value)} />}
      </Field>
      <Field label="Expires after (minutes)">
        {(id) => (
          <input
            id={id}
            type="number"
            min={1}
            required
            value={minutes}
            onChange={(e) => setMinutes(e.target.value)}
          />
        )}
      </Field>
      <label className="check">
        <input type="checkbox" checked={allowSync} onChange={(e) => setAllowSync(e.target.checked)} /> Allow
        syncs outside windows
      </label>
      <label className="check">
        <input type="checkbox" checked={pauseHeal} onChange={(e) => setPauseHeal(e.target.checked)} /> Pause
        self-heal (manual changes are recorded, not reverted)
      </label>
      <div className="actions">
        <button type="submit" aria-disabled={open.isPending}>
          Open break-glass
        </button>
      </div>
      <ErrorNote error={open.error} />
    </form>
  );
}

function ManualChanges({ id }: { id: number }) {
  const record = useQuery({
    queryKey: ['break-glass', 'record', id],
    queryFn: () => get<BreakGlassRecordView>(`/api/v1/break-glass/${id}/record`),
  });
  if (record.error) return <ErrorNote error={record.error} />;
  if (!record.data) return null;
  if (record.data.changes.length === 0) return <p>No manual changes recorded.</p>;
  return (
    <ul className="plain">
      {record.data.changes.map((c, i) => (
        <li key={i}>
          <When at={c.at} /> {c.target} on {c.cluster}: {c.summary} ({c.state}
          {c.manager ? `, by ${c.manager}` : ''})
        </li>
      ))}
    </ul>
  );
}

export function BreakGlassView() {
  const canOperate = useCan('operator');
  const list = useQuery({
    queryKey: ['break-glass', 'all'],
    queryFn: () => get<BreakGlassView[]>('/api/v1/break-glass', { state: 'all' }),
  });
  return (
    <>
      <h1>Break-glass</h1>
      <p>
        An override for an incident: syncs outside windows and/or self-heal paused, on one cluster, appset or
        target, with a reason and an expiry. Every manual change an agent sees under it is recorded.
      </p>
      {canOperate && (
        <section aria-labelledby="open-bg">
          <h2 id="open-bg">Open</h2>
          <OpenBreakGlass />
        </section>
      )}
      <h2>Overrides</h2>
      <ErrorNote error={list.error} />
      {list.data && list.data.length === 0 && <p>None.</p>}
      {list.data?.map((b) => (
        <article
          key={b.id}
          className="card"
          aria-labelledby={`bg-${b.id}`}
          data-testid={`break-glass-${b.id}`}
        >
          {/* Focusable from script only: closing the override removes its form, and focus lands here. */}
          <h3 id={`bg-${b.id}`} tabIndex={-1}>
            #{b.id} {b.scope} {b.name} <Status value={b.state} />
          </h3>
          <p>
            {b.reason} — opened by {b.openedBy} <When at={b.openedAt} />, expires <When at={b.expiresAt} />
            {b.closedAt && (
              <>
                ; closed by {b.closedBy} <When at={b.closedAt} />
                {b.closeReason ? `: ${b.closeReason}` : ''}
              </>
            )}
            . {b.allowSyncOutsideWindows ? 'Syncs outside windows allowed. ' : ''}
            {b.pauseSelfHeal ? 'Self-heal paused. ' : ''}
            {b.manualChanges} manual changes.
          </p>
          {b.manualChanges > 0 && <ManualChanges id={b.id} />}
          {canOperate && b.state === 'active' && (
            <ReasonForm
              label={`Close break-glass ${b.id}`}
              fieldLabel={`Reason to close #${b.id}`}
              button="Close"
              optional
              action={(reason) =>
                api<BreakGlassView>('POST', `/api/v1/break-glass/${b.id}/close`, reason ? { reason } : {})
              }
              changes={[['break-glass'], ['fleet']]}
              onDone={() => document.getElementById(`bg-${b.id}`)?.focus()}
            />
          )}
        </article>
      ))}
    </>
  );
}
