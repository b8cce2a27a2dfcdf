import { FLOTILLA_API_VERSION } from '@flotilla/fleet-config';

/** What the hub answers, as much of it as the export reads. */
export interface ExportInput {
  appSets: { name: string; source?: { managedBy?: string }; document: unknown }[];
  projects: { name: string; source?: { managedBy?: string }; document: unknown }[];
  windows: ({ name: string; description?: string } & Record<string, unknown>)[];
  clusters: { name: string; labels: Record<string, string> }[];
  /** `kind/name` of every object a fleet source manages (they are in Git already). */
  gitManaged: ReadonlySet<string>;
  includeGit: boolean;
}

/** One object in a fleet-config kind, and the file it would live in. */
export interface ExportedObject {
  file: string;
  object: { apiVersion: string; kind: string; metadata: { name: string }; spec?: unknown };
}

const WINDOW_FIELDS = [
  'kind',
  'schedule',
  'duration',
  'timeZone',
  'applications',
  'namespaces',
  'clusters',
  'manualSync',
  'andOperator',
] as const;

/**
 * The hub's API-created objects as fleet-config documents, ready to commit to a fleet repository:
 * ApplicationSets as submitted (Flotilla's or Argo CD's form), Projects, SyncWindows, and each
 * labelled cluster's labels as a ClusterGroup. Objects a fleet source manages are left out unless
 * asked for. Sorted by kind and name, so two exports of the same hub read the same.
 */
export function exportFleetObjects(input: ExportInput): ExportedObject[] {
  const keep = (kind: string, name: string, managedBy?: string) =>
    input.includeGit || (managedBy !== 'git' && !input.gitManaged.has(`${kind}/${name}`));
  const out: ExportedObject[] = [];
  for (const p of input.projects)
    if (keep('Project', p.name, p.source?.managedBy))
      out.push({ file: `projects/${p.name}.yaml`, object: p.document as ExportedObject['object'] });
  for (const w of input.windows) {
    if (!keep('SyncWindow', w.name)) continue;
    const spec = Object.fromEntries(WINDOW_FIELDS.filter((f) => w[f] !== undefined).map((f) => [f, w[f]]));
    out.push({
      file: `windows/${w.name}.yaml`,
      object: {
        apiVersion: FLOTILLA_API_VERSION,
        kind: 'SyncWindow',
        metadata: { name: w.name, ...(w.description ? { annotations: { description: w.description } } : {}) },
        spec,
      },
    });
  }
  for (const c of input.clusters) {
    const name = `cluster-${c.name}`;
    if (Object.keys(c.labels).length === 0 || !keep('ClusterGroup', name)) continue;
    out.push({
      file: `clusters/${c.name}.yaml`,
      object: {
        apiVersion: FLOTILLA_API_VERSION,
        kind: 'ClusterGroup',
        metadata: { name },
        spec: { clusters: [c.name], labels: c.labels },
      },
    });
  }
  for (const a of input.appSets)
    if (keep('ApplicationSet', a.name, a.source?.managedBy))
      out.push({ file: `appsets/${a.name}.yaml`, object: a.document as ExportedObject['object'] });
  const order = ['Project', 'SyncWindow', 'ClusterGroup', 'ApplicationSet'];
  return out.sort(
    (x, y) =>
      order.indexOf(x.object.kind) - order.indexOf(y.object.kind) ||
      (x.object.metadata.name < y.object.metadata.name ? -1 : 1),
  );
}
