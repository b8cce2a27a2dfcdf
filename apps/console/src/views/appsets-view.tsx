import type { AppSetView } from '@flotilla/contract';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'wouter';
import { get } from '../api.js';
import { ErrorNote, Status, When } from '../parts.js';

/** Every ApplicationSet with its status; a held one says so here, before anyone opens it. */
export function AppSetsView() {
  const appSets = useQuery({ queryKey: ['appsets'], queryFn: () => get<AppSetView[]>('/api/v1/appsets') });
  return (
    <>
      <h1>ApplicationSets</h1>
      <ErrorNote error={appSets.error} />
      {appSets.data && appSets.data.length === 0 && <p>No ApplicationSets yet.</p>}
      {appSets.data && appSets.data.length > 0 && (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Project</th>
                <th scope="col">Targets</th>
                <th scope="col">Managed by</th>
                <th scope="col">Last expanded</th>
              </tr>
            </thead>
            <tbody>
              {appSets.data.map((a) => (
                <tr key={a.id}>
                  <th scope="row">
                    <Link href={`/appsets/${encodeURIComponent(a.name)}`}>{a.name}</Link>
                  </th>
                  <td>
                    <Status value={a.status} />
                    {a.pendingExpansion && ' deletion held for confirmation'}
                  </td>
                  <td>{a.project}</td>
                  <td>{a.targetCount}</td>
                  <td>{a.source.managedBy}</td>
                  <td>
                    <When at={a.lastExpandedAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
