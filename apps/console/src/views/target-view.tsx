import type {
  ExplainView,
  SyncRunPageView,
  TargetListItemView,
  TargetOperationView,
  TargetWindowsView,
} from '@flotilla/contract';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link } from 'wouter';
import { ApiError, api, get } from '../api.js';
import { shortRevision } from '../format.js';
import { ErrorNote, Field, Reason, Status, When } from '../parts.js';
import { RunsTable, runResources } from '../runs-table.js';
import { useCan } from '../session.js';
import { RefreshForm } from './appset-view.js';
import { SyncForm } from './sync-form.js';
import { LiveDiff, TargetEvents } from './target-diff.js';

/**
 * Rollback is a pin: the target is served that revision whatever Git and auto-sync say, until the
 * pin is removed (or expires). The revisions offered are the ones this target ran successfully.
 */
function PinForm({
  target,
  pinned,
  automated,
  revisions,
}: {
  target: string;
  pinned: boolean;
  automated: boolean;
  revisions: string[];
}) {
  const client = useQueryClient();
  const [revision, setRevision] = useState('');
  const [reason, setReason] = useState('');
  const path = `/api/v1/targets/${encodeURIComponent(target)}/pin`;
  const done = () => {
    setReason('');
    void client.invalidateQueries({ queryKey: ['target', target] });
    void client.invalidateQueries({ queryKey: ['fleet'] });
  };
  const pin = useMutation({
    mutationFn: async () => {
      await api<unknown>('POST', path, { revision: revision || revisions[0], reason });
      // As in Argo CD, a rollback syncs: with automated sync off nothing else would apply the pin.
      if (!automated)
        await api<TargetOperationView>('POST', `/api/v1/targets/${encodeURIComponent(target)}/sync`, {
          reason: `rollback: ${reason}`,
        });
    },
    onSuccess: done,
  });
  const unpin = useMutation({ mutationFn: () => api<void>('DELETE', path, { reason }), onSuccess: done });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (pinned) unpin.mutate();
    else pin.mutate();
  };
  if (!pinned && revisions.length === 0) return <p>No earlier successful run to roll back to.</p>;
  return (
    <form
      className="inline-form"
      onSubmit={submit}
      aria-label={pinned ? 'Remove the pin' : 'Roll back (pin)'}
    >
      {!pinned && (
        <Field label="Revision">
          {(id) => (
            <select id={id} value={revision || revisions[0]} onChange={(e) => setRevision(e.target.value)}>
              {revisions.map((r) => (
                <option key={r} value={r}>
                  {shortRevision(r)}
                </option>
              ))}
            </select>
          )}
        </Field>
      )}
      <Field label={pinned ? 'Reason to remove the pin' : 'Reason for the rollback'}>
        {(id) => <input id={id} required value={reason} onChange={(e) => setReason(e.target.value)} />}
      </Field>
      <button type="submit" disabled={pin.isPending || unpin.isPending || reason.trim() === ''}>
        {pinned ? 'Remove pin' : 'Roll back and pin'}
      </button>
      <ErrorNote error={pin.error ?? unpin.error} />
    </form>
  );
}

export function TargetView({ name }: { name: string }) {
  const canOperate = useCan('operator');
  const enc = encodeURIComponent(name);
  const target = useQuery({
    queryKey: ['target', name],
    queryFn: async () => {
      const [t] = await get<TargetListItemView[]>('/api/v1/targets', { name });
      if (!t) throw new ApiError(404, 'not-found', `target "${name}" not found`);
      return t;
    },
  });
  const runs = useQuery({
    queryKey: ['history', 'target', name],
    queryFn: () => get<SyncRunPageView>('/api/v1/sync-runs', { target: name, limit: 20 }),
  });
  const operations = useQuery({
    queryKey: ['operations', name],
    queryFn: () => get<TargetOperationView[]>(`/api/v1/targets/${enc}/operations`),
  });
  const windows = useQuery({
    queryKey: ['windows-of', name],
    queryFn: () => get<TargetWindowsView>(`/api/v1/targets/${enc}/windows`),
  });
  const t = target.data;
  const explain = useQuery({
    queryKey: ['explain', t?.cluster, t?.appSet],
    enabled: !!t,
    queryFn: () => get<ExplainView>('/api/v1/explain', { cluster: t!.cluster, appset: t!.appSet }),
  });
  if (target.error) return <ErrorNote error={target.error} />;
  if (!t) return <p className="loading">Loading…</p>;
  const lastRun = runs.data?.items[0];
  return (
    <>
      <p>
        <Link href="/">Fleet</Link> /{' '}
        <Link href={`/appsets/${encodeURIComponent(t.appSet)}`}>{t.appSet}</Link> / {t.cluster}
      </p>
      <h1>{t.name}</h1>
      <dl className="summary">
        <dt>Sync</dt>
        <dd>
          <Status value={t.syncStatus} />
        </dd>
        <dt>Health</dt>
        <dd>
          <Status value={t.health} /> {t.healthMessage}
        </dd>
        <dt>Reason</dt>
        <dd data-testid="target-reason">
          {t.reason ? <Reason reason={t.reason} /> : 'none: Synced and Healthy'}
        </dd>
        <dt>Git wants</dt>
        <dd>
          <code>{shortRevision(t.desiredRevision)}</code> ({t.targetRevision}) at {t.repoUrl} {t.path}
        </dd>
        <dt>Running</dt>
        <dd>
          <code data-testid="synced-revision">{shortRevision(t.lastSyncedRevision)}</code>, synced{' '}
          <When at={t.lastSyncedAt} />; last report <When at={t.lastReportAt} />
        </dd>
        <dt>Pin</dt>
        <dd>
          {t.pin ? (
            <>
              <code>{shortRevision(t.pin.revision)}</code> by {t.pin.actor}: {t.pin.reason}
            </>
          ) : (
            'not pinned'
          )}
        </dd>
      </dl>

      <LiveDiff target={t.name} />

      {canOperate && (
        <section aria-labelledby="ops">
          <h2 id="ops">Sync</h2>
          <SyncForm target={t.name} />
          <h3>Refresh</h3>
          <RefreshForm appSet={t.appSet} />
          <h3>Rollback</h3>
          <PinForm
            target={t.name}
            pinned={t.pin !== null}
            automated={(t.syncPolicy as { automated?: unknown } | null)?.automated === true}
            revisions={[
              ...new Set(
                (runs.data?.items ?? [])
                  .filter(
                    (r) => r.outcome === 'Succeeded' && !r.dryRun && r.revision !== t.lastSyncedRevision,
                  )
                  .map((r) => r.revision),
              ),
            ]}
          />
        </section>
      )}

      <section aria-labelledby="operations">
        <h2 id="operations">Requested operations</h2>
        <ErrorNote error={operations.error} />
        {operations.data && operations.data.length === 0 && <p>None.</p>}
        {operations.data && operations.data.length > 0 && (
          <ul className="plain" data-testid="operations">
            {operations.data.map((o) => (
              <li key={o.id}>
                <Status value={o.state} /> {o.kind}
                {o.dryRun ? ' (dry run)' : ''}
                {o.prune ? ' (prune)' : ''} by {o.requestedBy}, <When at={o.createdAt} />: {o.reason}
                {o.message ? ` — ${o.message}` : ''}
              </li>
            ))}
          </ul>
        )}
      </section>

      <section aria-labelledby="windows">
        <h2 id="windows">Sync windows</h2>
        <ErrorNote error={windows.error} />
        {windows.data && (
          <>
            <p>
              {windows.data.canSync ? 'Automatic syncs may run now.' : 'Automatic syncs are held now.'}{' '}
              {windows.data.canSyncManually ? 'Manual syncs may run.' : 'Manual syncs are held too.'}{' '}
              {!windows.data.canSync && (
                <>
                  Next open:{' '}
                  {windows.data.nextOpen ? (
                    <When at={windows.data.nextOpen} />
                  ) : windows.data.heldBy.length > 0 ? (
                    `when ${windows.data.heldBy.join(', ')} is changed or deleted (always in force)`
                  ) : (
                    'not within a year'
                  )}
                  .
                </>
              )}
            </p>
            {windows.data.windows.length > 0 && (
              <ul className="plain">
                {windows.data.windows.map((w) => (
                  <li key={w.name}>
                    {w.kind} <strong>{w.name}</strong>: {w.schedule} for {w.duration} ({w.timeZone})
                    {w.active ? ' — active now' : ''}
                  </li>
                ))}
              </ul>
            )}
            {windows.data.breakGlass.map((b) => (
              <p key={b.id}>
                Break-glass #{b.id}: {b.reason}, until <When at={b.expiresAt} />
              </p>
            ))}
          </>
        )}
      </section>

      <section aria-labelledby="objects">
        <h2 id="objects">Objects in the last run</h2>
        {runResources(lastRun).length === 0 ? (
          <p>No run reported yet.</p>
        ) : (
          <div className="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Kind</th>
                  <th scope="col">Namespace</th>
                  <th scope="col">Name</th>
                  <th scope="col">Action</th>
                  <th scope="col">Message</th>
                </tr>
              </thead>
              <tbody>
                {runResources(lastRun).map((r, i) => (
                  <tr key={i}>
                    <td>{r.kind}</td>
                    <td>{r.namespace ?? ''}</td>
                    <td>{r.name}</td>
                    <td>{r.action}</td>
                    <td className="message">{r.message ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <section aria-labelledby="history">
        <h2 id="history">Sync history</h2>
        <ErrorNote error={runs.error} />
        {runs.data && <RunsTable runs={runs.data.items} showTarget={false} />}
        <p>
          <Link href={`/history?target=${enc}`}>All runs of this target</Link>
        </p>
      </section>

      <TargetEvents target={t.name} />

      <section aria-labelledby="explain">
        <h2 id="explain">Explain</h2>
        <ErrorNote error={explain.error} />
        {explain.data && (
          <>
            <p>
              ApplicationSet {explain.data.appSet}: {explain.data.appSetStatus.status}
              {explain.data.appSetStatus.heldMessage
                ? ` — ${explain.data.appSetStatus.heldMessage}`
                : ''}.{' '}
              {explain.data.matched
                ? 'A generator gives this cluster targets.'
                : 'No generator matches this cluster.'}
            </p>
            <ul className="plain">
              {explain.data.targets
                .filter((x) => x.name === t.name)
                .flatMap((x) => x.holds)
                .map((h, i) => (
                  <li key={i}>
                    <strong>{h.kind}</strong>: {h.message}
                  </li>
                ))}
            </ul>
          </>
        )}
      </section>
    </>
  );
}
