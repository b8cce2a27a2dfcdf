import type { SyncRunView } from '@flotilla/contract';
import { Link } from 'wouter';
import { shortRevision } from './format.js';
import { Status, When } from './parts.js';

export function RunsTable({ runs, showTarget = true }: { runs: SyncRunView[]; showTarget?: boolean }) {
  if (runs.length === 0) return <p>No sync runs.</p>;
  return (
    <div className="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Started</th>
            {showTarget && <th scope="col">Target</th>}
            <th scope="col">Cluster</th>
            <th scope="col">Trigger</th>
            <th scope="col">Outcome</th>
            <th scope="col">Revision</th>
            <th scope="col">Message</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <tr key={r.id}>
              <td>
                <When at={r.startedAt} />
              </td>
              {showTarget && (
                <td>
                  <Link href={`/targets/${encodeURIComponent(r.target)}`}>{r.target}</Link>
                </td>
              )}
              <td>{r.cluster}</td>
              <td>
                {r.trigger}
                {r.dryRun ? ' (dry run)' : ''}
              </td>
              <td>
                <Status value={r.outcome} />
              </td>
              <td>
                <code>{shortRevision(r.revision)}</code>
              </td>
              <td className="message">{r.message}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

interface RunResource {
  kind?: string;
  name?: string;
  namespace?: string;
  action?: string;
  message?: string;
}

/** The objects the run touched, as the agent reported them. */
export function runResources(run: SyncRunView | undefined): RunResource[] {
  return Array.isArray(run?.resources) ? (run.resources as RunResource[]) : [];
}
