import type { AuditEventView, TargetDiffView } from '@flotilla/contract';
import { useQuery } from '@tanstack/react-query';
import { get } from '../api.js';
import { shortRevision } from '../format.js';
import { ErrorNote, When } from '../parts.js';

/**
 * What a sync would change on the target's cluster, object by object, from the agent's latest
 * comparison (`GET /api/v1/targets/:name/diff`, the same answer `flotilla diff TARGET` prints). The
 * diffs are shown as text in a <pre>: object names and values come from Git and the cluster.
 */
export function LiveDiff({ target }: { target: string }) {
  const diff = useQuery({
    queryKey: ['target', target, 'diff'],
    queryFn: () => get<TargetDiffView>(`/api/v1/targets/${encodeURIComponent(target)}/diff`),
  });
  const c = diff.data?.comparison;
  return (
    <section aria-labelledby="live-diff">
      <h2 id="live-diff">Live diff</h2>
      <ErrorNote error={diff.error} />
      {diff.data && !c && <p>The agent has not compared this target with its cluster yet.</p>}
      {c && (
        <>
          <p data-testid="diff-summary">
            {c.inSync
              ? `In sync: the ${c.compared} objects Git declares match the cluster.`
              : `${c.objects.length} of ${c.compared} objects would change${c.truncated ? ' (more than listed; the list was cut)' : ''}.`}{' '}
            Compared <When at={c.observedAt} /> against <code>{shortRevision(c.revision)}</code>
            {c.current
              ? '.'
              : ` — an older state than Git wants now (${shortRevision(diff.data?.desiredRevision)}); the agent compares again when it is given the new one.`}
          </p>
          {c.objects.map((o) => {
            const id = `${o.group ? `${o.group}/` : ''}${o.kind} ${o.namespace ? `${o.namespace}/` : ''}${o.name}`;
            return (
              <details key={id} className="card" open={c.objects.length <= 5}>
                <summary>
                  {id}:{' '}
                  {o.action === 'create'
                    ? 'missing from the cluster, would be created'
                    : o.action === 'delete'
                      ? o.prune
                        ? 'no longer in Git, a sync would delete it (prune on)'
                        : 'no longer in Git, left in place (prune off)'
                      : 'would change'}
                  {o.paths.length > 0 && ` (${o.paths.join(', ')})`}
                </summary>
                <pre className="diff" aria-label={`Diff of ${id}`} tabIndex={0}>
                  {o.diff}
                  {o.truncated ? '\n… (cut)' : ''}
                </pre>
              </details>
            );
          })}
        </>
      )}
    </section>
  );
}

/** A line of an audit event's details for a person: the drift's object and fields, or the reason given. */
function detailsText(details: unknown): string {
  if (!details || typeof details !== 'object') return '';
  const d = details as {
    resource?: { kind?: string; namespace?: string; name?: string };
    paths?: string[];
    reason?: string;
    revision?: string;
  };
  const parts: string[] = [];
  if (d.resource)
    parts.push(
      `${d.resource.kind ?? ''} ${d.resource.namespace ? `${d.resource.namespace}/` : ''}${d.resource.name ?? ''}`,
    );
  if (d.paths?.length) parts.push(d.paths.join(', '));
  if (d.revision) parts.push(shortRevision(d.revision));
  if (d.reason) parts.push(d.reason);
  return parts.join(' · ');
}

/**
 * What happened to the target beyond its sync runs: the drift the agent saw and corrected, and what
 * people did, from the audit log (scope `target:NAME`). The Kubernetes Events the agent writes in
 * its own cluster (Synced, Pruned, SyncFailed, Healed, HealContested) are not sent to the hub; the
 * same facts arrive as the sync runs and these drift reports.
 */
export function TargetEvents({ target }: { target: string }) {
  const events = useQuery({
    queryKey: ['target', target, 'events'],
    queryFn: () =>
      get<{ items: AuditEventView[]; nextCursor: string | null }>('/api/v1/audit', {
        scope: `target:${target}`,
        limit: 20,
      }),
  });
  return (
    <section aria-labelledby="events">
      <h2 id="events">Events</h2>
      <p className="hint">
        Drift the agent reported and what people did, newest first. The hub does not keep the Kubernetes
        Events the agent writes in its cluster; the same facts come as the sync history and drift reports.
      </p>
      <ErrorNote error={events.error} />
      {events.data && events.data.items.length === 0 && <p>None yet.</p>}
      {events.data && events.data.items.length > 0 && (
        <ul className="plain" data-testid="target-events">
          {events.data.items.map((e) => (
            <li key={e.id}>
              <When at={e.at} /> <strong>{e.action}</strong> by {e.actor}
              {detailsText(e.details) && `: ${detailsText(e.details)}`}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
