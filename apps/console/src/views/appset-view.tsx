import type {
  AppSetRefreshView,
  AppSetView as AppSetData,
  ExpansionPreviewView,
  RolloutDetailView,
  RolloutView,
  FleetView,
} from '@flotilla/contract';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useRef, useState, type FormEvent } from 'react';
import { Link } from 'wouter';
import { ApiError, api, get } from '../api.js';
import { shortRevision } from '../format.js';
import { ErrorNote, Pager, Reason, Status, When } from '../parts.js';
import { ReasonForm } from '../reason-form.js';
import { useFocusRescue } from '../focus.js';
import { useCan } from '../session.js';
import { VirtualTable } from '../virtual-rows.js';
import { DeletionGuard } from './deletion-guard.js';

const targetLink = (name: string) => <Link href={`/targets/${encodeURIComponent(name)}`}>{name}</Link>;

/** The last expansion's error as the hub stored it: `{code, message, path}`. */
function expansionError(error: unknown): string | null {
  if (!error || typeof error !== 'object') return null;
  const e = error as { code?: unknown; message?: unknown; path?: unknown };
  const parts = [typeof e.message === 'string' ? e.message : JSON.stringify(error)];
  if (typeof e.path === 'string' && e.path) parts.push(`(${e.path})`);
  if (typeof e.code === 'string') parts.push(`[${e.code}]`);
  return parts.join(' ');
}

/**
 * Evaluates the appset again now (`hard`: fetching its Git repositories first). Offered on a target
 * too: a target's desired state is its appset's expansion; its agent compares the cluster on its own.
 */
export function RefreshForm({ appSet }: { appSet: string }) {
  const client = useQueryClient();
  const [hard, setHard] = useState(false);
  const refresh = useMutation({
    mutationFn: () =>
      api<AppSetRefreshView>('POST', `/api/v1/appsets/${encodeURIComponent(appSet)}/refresh`, { hard }),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: ['appset', appSet] });
      void client.invalidateQueries({ queryKey: ['target'] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!refresh.isPending) refresh.mutate();
  };
  return (
    <form className="inline-form" aria-label={`Refresh ApplicationSet ${appSet}`} onSubmit={submit}>
      <label className="check">
        <input type="checkbox" checked={hard} onChange={(e) => setHard(e.target.checked)} /> Fetch its Git
        repositories first (hard refresh)
      </label>
      <button type="submit" aria-disabled={refresh.isPending}>
        Refresh {appSet}
      </button>
      {refresh.isSuccess && (
        <p role="status">
          Refresh queued{' '}
          {refresh.data.hard
            ? `with a fetch of ${refresh.data.repositories.map((r) => r.url).join(', ') || 'no repository'}`
            : ''}
          .
        </p>
      )}
      <ErrorNote error={refresh.error} />
    </form>
  );
}

/** Pause, resume and promote, each with the reason the audit log keeps; only those that apply now. */
function RolloutControls({ rollout }: { rollout: RolloutView }) {
  const path = (action: string) => `/api/v1/rollouts/${encodeURIComponent(rollout.appSet)}/${action}`;
  const changes = [['rollout', rollout.appSet], ['appset', rollout.appSet], ['fleet']];
  const finished = rollout.status === 'Completed' || rollout.status === 'Superseded';
  const pausing = rollout.status === 'Progressing';
  return (
    <div className="rollout-controls">
      {/* One form that turns from Pause into Resume and back: the field keeps keyboard focus. */}
      {(pausing || rollout.status === 'Paused') && (
        <ReasonForm
          label={pausing ? 'Pause the rollout' : 'Resume the rollout'}
          fieldLabel={pausing ? 'Reason to pause' : 'Reason to resume'}
          button={pausing ? 'Pause' : 'Resume'}
          action={(reason) => api('POST', path(pausing ? 'pause' : 'resume'), { reason })}
          changes={changes}
        />
      )}
      {!finished && (
        <ReasonForm
          label="Promote the rollout"
          fieldLabel="Reason to promote"
          button="Promote"
          action={(reason) => api('POST', path('promote'), { reason })}
          changes={changes}
        />
      )}
    </div>
  );
}

/** Targets of a rollout asked at a time: its status, steps and counts come with every page. */
const ROLLOUT_PAGE = 100;

function Rollout({ appSet }: { appSet: string }) {
  const canOperate = useCan('operator');
  const heading = useRef<HTMLHeadingElement>(null);
  const rescueFocus = useFocusRescue(heading);
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const rollout = useQuery({
    queryKey: ['rollout', appSet, cursor ?? null],
    placeholderData: keepPreviousData,
    queryFn: async () => {
      try {
        return await get<RolloutDetailView>(`/api/v1/rollouts/${encodeURIComponent(appSet)}`, {
          limit: ROLLOUT_PAGE,
          cursor,
        });
      } catch (e) {
        // No rollout yet is an answer, not a failure.
        if (e instanceof ApiError && e.status === 404) return null;
        throw e;
      }
    },
  });
  const r = rollout.data;
  return (
    <section aria-labelledby="rollout" onFocus={rescueFocus}>
      {/* Focusable from script only: where focus goes when promoting the last step removes the controls. */}
      <h2 id="rollout" tabIndex={-1} ref={heading}>
        Rollout
      </h2>
      <ErrorNote error={rollout.error} />
      {r === null && <p>No rollout yet: each new revision Git resolves for this appset starts one.</p>}
      {r && (
        <>
          <dl className="summary">
            <dt>Revision</dt>
            <dd>
              <code>{shortRevision(r.revision)}</code>, started <When at={r.createdAt} />
            </dd>
            <dt>Status</dt>
            <dd data-testid="rollout-status">
              <Status value={r.status} />
              {r.finishedAt && (
                <>
                  {' '}
                  <When at={r.finishedAt} />
                </>
              )}
            </dd>
            <dt>Why</dt>
            <dd data-testid="rollout-message">{r.message || '—'}</dd>
            <dt>Progress</dt>
            <dd>
              {Object.keys(r.progress.released).length} of {r.targetCount} released
              {Object.keys(r.progress.failed).length > 0 &&
                `, ${Object.keys(r.progress.failed).length} failed`}
              {Object.keys(r.progress.skipped).length > 0 &&
                `, ${Object.keys(r.progress.skipped).length} skipped`}
            </dd>
          </dl>
          <h3>Steps</h3>
          {r.steps.length === 0 ? (
            <p>No strategy: every target is released at once.</p>
          ) : (
            <ol className="steps" data-testid="rollout-steps">
              {r.steps.map((s, i) => (
                <li
                  key={i}
                  aria-current={i === r.stepIndex && r.status !== 'Completed' ? 'step' : undefined}
                  className={i < r.stepIndex || r.status === 'Completed' ? 'done' : undefined}
                >
                  {s}
                  {i < r.stepIndex || r.status === 'Completed'
                    ? ' — done'
                    : i === r.stepIndex
                      ? ` — current, since ${new Date(r.stepStartedAt).toLocaleString()}`
                      : ''}
                </li>
              ))}
            </ol>
          )}
          {canOperate && <RolloutControls rollout={r} />}
          <div className="table-wrap">
            <table>
              <caption className="sr-only">Targets in the rollout</caption>
              <thead>
                <tr>
                  <th scope="col">Target</th>
                  <th scope="col">Cluster</th>
                  <th scope="col">Released</th>
                  <th scope="col">Running</th>
                  <th scope="col">Health</th>
                  <th scope="col">Note</th>
                </tr>
              </thead>
              <tbody>
                {r.targets.map((t) => (
                  <tr key={t.name}>
                    <th scope="row">{targetLink(t.name)}</th>
                    <td>{t.cluster}</td>
                    <td>
                      <code>{shortRevision(t.releasedRevision)}</code>{' '}
                      {t.releasedAt ? <When at={t.releasedAt} /> : 'not yet'}
                    </td>
                    <td>
                      <code>{shortRevision(t.lastSyncedRevision)}</code>
                    </td>
                    <td>
                      <Status value={t.health} />
                    </td>
                    <td className="message">
                      {[
                        t.pinnedAt && `pinned at ${shortRevision(t.pinnedAt)}`,
                        t.failed && `failed: ${t.failed}`,
                        t.skipped && `skipped: ${t.skipped}`,
                      ]
                        .filter(Boolean)
                        .join('; ')}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {(r.nextCursor !== null || cursors.length > 0) && (
            <Pager cursors={cursors} next={r.nextCursor} onChange={setCursors} />
          )}
        </>
      )}
    </section>
  );
}

/** What the generators make now, from today's inventory and Git, against what is stored. */
function GeneratorOutput({ appSet }: { appSet: string }) {
  const preview = useQuery({
    queryKey: ['appset-preview', appSet],
    queryFn: () => get<ExpansionPreviewView>(`/api/v1/appsets/${encodeURIComponent(appSet)}/preview`),
  });
  const p = preview.data;
  return (
    <section aria-labelledby="generated">
      <h2 id="generated">Generators&apos; output</h2>
      <ErrorNote error={preview.error} />
      {p && (
        <>
          <p data-testid="generator-summary">
            {p.targets.length} targets.{' '}
            {p.create.length + p.update.length + p.move.length + p.delete.length === 0
              ? 'The stored targets match.'
              : `An expansion now would create ${p.create.length}, update ${p.update.length}, move ${p.move.length} and delete ${p.delete.length}${p.guard.wouldHold ? `, and the deletion guard would hold it (${p.guard.deletePercent}% > ${p.guard.limit}%)` : ''}.`}
          </p>
          {/* One answer with every target (a thousand on a thousand clusters): only those in sight are drawn. */}
          <VirtualTable
            label="Targets the generators make"
            items={p.targets}
            columns={5}
            head={
              <tr aria-rowindex={1}>
                <th scope="col">Target</th>
                <th scope="col">Cluster</th>
                <th scope="col">Namespace</th>
                <th scope="col">Source</th>
                <th scope="col">Resolves to</th>
              </tr>
            }
            row={(t, place) => (
              <tr key={t.name} {...place}>
                <th scope="row">{t.name}</th>
                <td>{t.cluster}</td>
                <td>{t.namespace}</td>
                <td className="message">
                  {t.sources
                    ? t.sources.map((s) => `${s.repoUrl} ${s.path ?? s.chart ?? ''}`).join('; ')
                    : `${t.repoUrl} ${t.path}`}{' '}
                  ({t.targetRevision})
                </td>
                <td>
                  <code>{shortRevision(t.desiredRevision)}</code>
                </td>
              </tr>
            )}
          />
        </>
      )}
    </section>
  );
}

/**
 * The appset's targets a page of clusters at a time, through the fleet matrix's own query: filtered
 * and paged on the hub, so an appset on a thousand clusters is still a small answer.
 */
function AppSetTargets({ appSet }: { appSet: string }) {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const page = useQuery({
    queryKey: ['fleet', 'appset', appSet, cursor ?? null],
    queryFn: () => get<FleetView>('/api/v1/fleet', { appSet, cursor, limit: 50 }),
    placeholderData: keepPreviousData,
  });
  const cells = (page.data?.rows ?? []).flatMap((r) =>
    r.cells.filter((c) => c.appSet === appSet).map((c) => ({ ...c, cluster: r.cluster, online: r.online })),
  );
  return (
    <section aria-labelledby="targets">
      <h2 id="targets">Targets</h2>
      <ErrorNote error={page.error} />
      {page.data && (
        <p className="counts" data-testid="appset-counts">
          {page.data.counts.targets} targets on {page.data.counts.clusters} clusters ·{' '}
          {page.data.counts.sync.Synced} Synced, {page.data.counts.sync.OutOfSync} OutOfSync ·{' '}
          {page.data.counts.health.Healthy} Healthy, {page.data.counts.health.Degraded} Degraded
        </p>
      )}
      {page.data && cells.length === 0 && <p>No targets.</p>}
      {cells.length > 0 && (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Targets of {appSet}</caption>
            <thead>
              <tr>
                <th scope="col">Target</th>
                <th scope="col">Cluster</th>
                <th scope="col">Sync</th>
                <th scope="col">Health</th>
                <th scope="col">Revision</th>
                <th scope="col">Reason</th>
              </tr>
            </thead>
            <tbody>
              {cells.map((t) => (
                <tr key={t.target}>
                  <th scope="row">{targetLink(t.target)}</th>
                  <td>
                    {t.cluster}
                    {!t.online && ' (offline)'}
                  </td>
                  <td>
                    <Status value={t.syncStatus} />
                  </td>
                  <td>
                    <Status value={t.health} />
                  </td>
                  <td>
                    <code>{shortRevision(t.lastSyncedRevision)}</code>
                    {t.lastSyncedRevision !== t.desiredRevision && (
                      <>
                        {' → '}
                        <code>{shortRevision(t.desiredRevision)}</code>
                      </>
                    )}
                  </td>
                  <td>
                    <Reason reason={t.reason} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {page.data && (page.data.nextCursor !== null || cursors.length > 0) && (
        <Pager cursors={cursors} next={page.data.nextCursor} onChange={setCursors} />
      )}
    </section>
  );
}

export function AppSetView({ name }: { name: string }) {
  const canOperate = useCan('operator');
  const appSet = useQuery({
    queryKey: ['appset', name],
    queryFn: () => get<AppSetData>(`/api/v1/appsets/${encodeURIComponent(name)}`),
  });
  if (appSet.error) return <ErrorNote error={appSet.error} />;
  const a = appSet.data;
  if (!a) return <p className="loading">Loading…</p>;
  const error = expansionError(a.error);
  return (
    <>
      <p>
        <Link href="/appsets">ApplicationSets</Link> / {a.name}
      </p>
      <h1>{a.name}</h1>
      <dl className="summary">
        <dt>Status</dt>
        <dd data-testid="appset-status">
          <Status value={a.status} />
          {error && ` ${error}`}
        </dd>
        <dt>Project</dt>
        <dd>{a.project}</dd>
        <dt>Repositories</dt>
        <dd>{a.repoUrls.join(', ') || '—'}</dd>
        <dt>Managed by</dt>
        <dd>
          {a.source.managedBy === 'git'
            ? `Git: ${a.source.file ?? ''} in ${a.source.repo ?? ''} at ${shortRevision(a.source.commit)} (edit it there)`
            : 'the API'}
        </dd>
        <dt>Targets</dt>
        <dd>{a.targetCount}</dd>
        <dt>Last expanded</dt>
        <dd>
          <When at={a.lastExpandedAt} />
        </dd>
      </dl>
      {(a.fleetErrors ?? []).length > 0 && (
        <p className="error">
          Its fleet repository&apos;s last commit was refused: {JSON.stringify(a.fleetErrors)}
        </p>
      )}
      <DeletionGuard key={`guard-${a.name}`} appSet={a.name} held={a.pendingExpansion ?? null} />
      {canOperate && <RefreshForm appSet={a.name} />}

      <Rollout key={`rollout-${a.name}`} appSet={a.name} />

      <AppSetTargets key={`targets-${a.name}`} appSet={a.name} />

      <GeneratorOutput appSet={a.name} />
    </>
  );
}
