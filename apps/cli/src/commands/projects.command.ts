import { projectViewSchema, type ProjectView } from '@flotilla/contract';
import { z } from 'zod';
import { type CommandDescription } from '../command.js';
import { HubApiError, type HubClient } from '../fleet/hub-client.js';
import { readOneDocument, UsageError } from '../offline/offline-command.js';
import {
  age,
  columnsTable,
  describeHubCommand,
  expectName,
  expectPositionals,
  formatFields,
  printResult,
  runHubCommand,
  shortSha,
  stringValue,
  type Column,
  type HubArgValue,
  type HubCommandSpec,
} from './hub-command.js';

const CREATE_USAGE =
  'flotilla projects create NAME (--source-repos GLOBS [--destinations CLUSTER:NAMESPACE,...] [--sync-windows NAMES] [--description TEXT] | -f FILE)';
const UPDATE_USAGE = 'flotilla projects update NAME (FLAGS to change | -f FILE)';

/** The flags that set a field of the Project's spec (the rest of a project comes in a file). */
const SPEC_FLAGS = ['source-repos', 'destinations', 'sync-windows', 'description'];

const SPEC: HubCommandSpec = {
  name: 'projects',
  subcommands: ['list', 'get', 'create', 'update', 'delete'],
  listings: ['', 'list'],
  usage: [
    'usage: flotilla projects [list]',
    '       flotilla projects get NAME',
    `       ${CREATE_USAGE}`,
    `       ${UPDATE_USAGE}`,
    '       flotilla projects delete NAME',
    '',
    "The hub's projects (flotilla.dev/v1alpha1 Project): which repositories their ApplicationSets may",
    'use, where they may deploy, which kinds they may create and which sync windows apply. `create`',
    'and `update` take the spec from flags or a whole Project document from a file (-f, YAML or JSON;',
    'kind restrictions and destinations by cluster labels are written there). `update` with flags',
    'changes only the fields given. `delete` is refused while an ApplicationSet names the project.',
    'A project managed in a fleet repository is changed there: the hub refuses it here.',
    '',
    '  --source-repos GLOBS       repository URL globs, comma-separated (a leading ! denies; * for any)',
    '  --destinations LIST        CLUSTER_GLOB:NAMESPACE_GLOB, comma-separated (prod-*:web, *:*)',
    '  --sync-windows NAMES       the sync windows that apply, comma-separated',
    '  --description TEXT',
    '`list -o wide` adds the description, where it is managed and when it last changed.',
  ].join('\n'),
  options: {
    file: { type: 'string', short: 'f' },
    'source-repos': { type: 'string' },
    destinations: { type: 'string' },
    'sync-windows': { type: 'string' },
    description: { type: 'string' },
  },
  apiFields: {
    'spec.sourceRepos': 'source-repos',
    'spec.destinations': 'destinations',
    'spec.syncWindows': 'sync-windows',
    'spec.description': 'description',
  },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    const [sub = 'list', ...rest] = positionals;
    const edits = sub === 'create' || sub === 'update';
    if (!edits && (values['file'] !== undefined || hasSpecFlags(values)))
      throw new UsageError(`-f and the spec flags apply to 'projects create' and 'projects update' only`);
    switch (sub) {
      case 'list': {
        expectPositionals(rest, [], 'flotilla projects [list]');
        const projects = z
          .array(projectViewSchema)
          .parse(await client.everyPage<ProjectView>('/api/v1/projects'));
        printResult(projects, output, (wide) => projectTable(projects, wide));
        return 0;
      }
      case 'get': {
        const project = await getProject(client, expectName(rest, 'flotilla projects get NAME'));
        printResult(project, output, () => projectFields(project));
        return 0;
      }
      case 'create': {
        const [name = ''] = expectPositionals(rest, ['NAME'], CREATE_USAGE);
        if (await exists(client, name))
          throw new UsageError(`project ${name} exists: change it with 'flotilla projects update ${name}'`);
        const project = await apply(client, projectDocument(name, values, undefined));
        printResult(project, output, () => `Created project ${project.name}.\n${projectFields(project)}`);
        return 0;
      }
      case 'update': {
        const name = expectName(rest, UPDATE_USAGE);
        if (values['file'] === undefined && !hasSpecFlags(values))
          throw new UsageError(
            `nothing to change: give the fields to change as flags, or -f FILE; usage: ${UPDATE_USAGE}`,
          );
        // Must exist (create makes new ones); with flags, the fields not given stay as they are.
        const current = await getProject(client, name);
        const project = await apply(client, projectDocument(name, values, current));
        printResult(project, output, () => `Updated project ${project.name}.\n${projectFields(project)}`);
        return 0;
      }
      case 'delete': {
        const name = expectName(rest, 'flotilla projects delete NAME');
        await client.request('DELETE', `/api/v1/projects/${encodeURIComponent(name)}`);
        printResult({ deleted: name }, output, () => `Project ${name} deleted.`);
        return 0;
      }
      default:
        throw new UsageError(`unknown sub-command '${sub}'; expected list, get, create, update or delete`);
    }
  });
}

function hasSpecFlags(values: Record<string, HubArgValue>): boolean {
  return SPEC_FLAGS.some((f) => values[f] !== undefined);
}

async function getProject(client: HubClient, name: string): Promise<ProjectView> {
  return projectViewSchema.parse(await client.request('GET', `/api/v1/projects/${encodeURIComponent(name)}`));
}

async function exists(client: HubClient, name: string): Promise<boolean> {
  try {
    await getProject(client, name);
    return true;
  } catch (err) {
    if (err instanceof HubApiError && err.status === 404) return false;
    throw err;
  }
}

async function apply(client: HubClient, doc: Record<string, unknown>): Promise<ProjectView> {
  return projectViewSchema.parse(await client.request('POST', '/api/v1/projects', doc));
}

const list = (raw: string | undefined): string[] | undefined =>
  raw === undefined
    ? undefined
    : raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);

/** `prod-*:web` → `{cluster: 'prod-*', namespace: 'web'}`. */
function destinations(raw: string | undefined): { cluster: string; namespace: string }[] | undefined {
  return list(raw)?.map((d) => {
    const colon = d.indexOf(':');
    if (colon <= 0 || colon === d.length - 1)
      throw new UsageError(`--destinations takes CLUSTER_GLOB:NAMESPACE_GLOB pairs (prod-*:web), not '${d}'`);
    return { cluster: d.slice(0, colon), namespace: d.slice(colon + 1) };
  });
}

/**
 * The Project document to send: the file's (its name must be NAME), or the current document (none
 * on create) with the spec fields of the flags given on top. The hub validates it.
 */
function projectDocument(
  name: string,
  values: Record<string, HubArgValue>,
  current: ProjectView | undefined,
): Record<string, unknown> {
  const file = stringValue(values['file']);
  if (file !== undefined) {
    if (hasSpecFlags(values)) throw new UsageError('give the project in a file (-f) or with flags, not both');
    const doc = readOneDocument(file);
    const named = (doc as { metadata?: { name?: unknown } } | null)?.metadata?.name;
    if (typeof doc !== 'object' || doc === null || named !== name)
      throw new UsageError(`${file}: expected a Project document with metadata.name ${name}`);
    return doc as Record<string, unknown>;
  }
  const base = (current?.document ?? {
    apiVersion: 'flotilla.dev/v1alpha1',
    kind: 'Project',
    metadata: { name },
    spec: {},
  }) as { spec?: Record<string, unknown> };
  const fields = {
    sourceRepos: list(stringValue(values['source-repos'])),
    destinations: destinations(stringValue(values['destinations'])),
    syncWindows: list(stringValue(values['sync-windows'])),
    description: stringValue(values['description']),
  };
  const given = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
  return { ...base, spec: { ...base.spec, ...given } };
}

interface ProjectSpecView {
  description?: string;
  sourceRepos?: string[];
  destinations?: { cluster?: string; clusterSelector?: unknown; namespace: string }[];
  syncWindows?: string[];
}

/** The stored document's spec; the contract leaves the document open (it is the Project as applied). */
function specOf(p: ProjectView): ProjectSpecView {
  return (p.document as { spec?: ProjectSpecView } | null)?.spec ?? {};
}

function destinationText(p: ProjectView): string {
  const d = specOf(p).destinations ?? [];
  if (d.length === 0) return '-';
  return d.map((x) => `${x.cluster ?? JSON.stringify(x.clusterSelector)}:${x.namespace}`).join(',');
}

function managedBy(p: ProjectView): string {
  const { managedBy: by, file, commit } = p.source;
  if (!file && !commit) return by;
  return `${by} ${file ?? '?'}${commit ? `@${shortSha(commit)}` : ''}`;
}

const PROJECT_COLUMNS: Column<ProjectView>[] = [
  { header: 'NAME', cell: (p) => p.name },
  { header: 'SOURCE REPOS', cell: (p) => (specOf(p).sourceRepos ?? []).join(',') || '-' },
  { header: 'DESTINATIONS', cell: destinationText },
  { header: 'SYNC WINDOWS', cell: (p) => (specOf(p).syncWindows ?? []).join(',') || '-' },
  { header: 'MANAGED BY', cell: managedBy, wide: true },
  { header: 'UPDATED', cell: (p) => age(p.updatedAt), wide: true },
  { header: 'DESCRIPTION', cell: (p) => specOf(p).description?.replace(/\s*\n\s*/g, ' ') || '-', wide: true },
];

export function projectTable(projects: ProjectView[], wide = false): string {
  return columnsTable(PROJECT_COLUMNS, projects, wide);
}

function projectFields(p: ProjectView): string {
  const spec = specOf(p);
  return formatFields([
    ['Name', p.name],
    ['Description', spec.description || '-'],
    ['Source repos', (spec.sourceRepos ?? []).join(', ') || '-'],
    ['Destinations', destinationText(p)],
    ['Sync windows', (spec.syncWindows ?? []).join(', ') || '-'],
    ['Managed by', managedBy(p)],
    ['Created', p.createdAt],
    ['Updated', p.updatedAt],
  ]);
}
