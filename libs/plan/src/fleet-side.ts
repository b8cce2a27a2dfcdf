import { type KubeObject } from '@flotilla/contract';
import { formatFleetError, validateFleetDirectory, type FleetFile } from '@flotilla/fleet-config';
import { generate, parseApplicationSet, type ClusterInfo, type RepositoryFiles } from '@flotilla/generators';
import { relabelCluster, type ClusterGroupSpec } from './cluster-groups.js';
import { type FleetSide, type PlannedTarget } from './plan-fleet-change.js';
import { withRawAppSets } from './stored-appsets.js';

/**
 * One side of a plan as the hub would hold it after applying it, built from the files of the fleet
 * repository at a revision: validated (an invalid one is refused as a whole, as the hub refuses it),
 * its appsets stored as written, their targets generated over the inventory (labelled by this side's
 * ClusterGroups) and rendered. Reading Git and rendering are the caller's (`SideReader`): the CLI
 * reads checkouts, the hub its mirrors.
 */

/** One Application an appset of a side generates: what the caller renders. */
export interface PlanCandidate {
  appSet: string;
  name: string;
  /** The destination cluster's name (by name, else by server); null when the inventory lacks it. */
  cluster: string | null;
  spec: Record<string, unknown>;
  /** Where its errors point: `targets[i].spec`. */
  at: string;
}

/** The I/O one side needs, given by the caller. */
export interface SideReader {
  /** The files of a Git repository a generator reads (a git generator), at `revision`. */
  repository(repoURL: string, revision: string): RepositoryFiles;
  /** The candidate's objects in apply order and their bundle digest, as the hub renders a target. */
  render(candidate: PlanCandidate): Promise<{ digest: string; objects: readonly KubeObject[] }>;
  /** What the render depends on: candidates with one key share one render (see `sharedRenderKey`). */
  renderKey(candidate: PlanCandidate): string;
}

export interface SideInput {
  /** 'base' or 'head', for messages. */
  name: string;
  /** The commit read, or null for a directory that is not read from Git. */
  revision: string | null;
  /** The fleet repository's files (under the fleet source's path). */
  files: readonly FleetFile[];
  /** The inventory, with the labels `labelledBy`'s ClusterGroups gave. */
  clusters: readonly ClusterInfo[];
  /** The ClusterGroups whose labels the inventory carries (taken off before this side's go on); null: none. */
  labelledBy: readonly ClusterGroupSpec[] | null;
  /** Render only these appsets (all when absent). */
  appSets?: ReadonlySet<string>;
  /** Renders at once (Helm and Kustomize are processes); default 4. */
  concurrency?: number;
}

/**
 * Why a side could not be built: the fleet repository is invalid (`invalid-fleet`), or an appset's
 * generators or renders failed (`appset-failed`; `cause` holds the lib's error with its own code).
 */
export class PlanSideError extends Error {
  override readonly name = 'PlanSideError';
  constructor(
    readonly code: 'invalid-fleet' | 'appset-failed',
    message: string,
    readonly side: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export async function buildFleetSide(
  input: SideInput,
  reader: SideReader,
): Promise<{ side: FleetSide; groups: ClusterGroupSpec[] }> {
  const at = `${input.name}${input.revision === null ? '' : ` (${input.revision.slice(0, 12)})`}`;
  const validation = validateFleetDirectory(input.files);
  if (validation.errors.length > 0) {
    const shown = validation.errors.slice(0, 5).map((e) => formatFleetError(e));
    const count = `${validation.errors.length} error${validation.errors.length === 1 ? '' : 's'}`;
    throw new PlanSideError(
      'invalid-fleet',
      `${at}: the fleet repository is invalid (${count}; the hub would apply nothing): ${shown.join('; ')}`,
      input.name,
    );
  }
  const objects = withRawAppSets(validation.objects, input.files);
  const groups = objects.flatMap((o) => (o.kind === 'ClusterGroup' ? [o.object.spec] : []));
  const clusters = input.clusters.map((c) => ({
    ...c,
    labels: input.labelledBy === null ? c.labels : relabelCluster(c.name, c.labels, input.labelledBy, groups),
  }));
  const servers = new Map(clusters.map((c) => [c.name, c.server]));
  const targets: PlannedTarget[] = [];
  const renders = new Map<string, ReturnType<SideReader['render']>>();
  const limit = limiter(input.concurrency ?? 4);
  for (const o of objects) {
    if (o.kind !== 'ApplicationSet' || (input.appSets && !input.appSets.has(o.name))) continue;
    try {
      const candidates = appSetCandidates(o.name, o.object, clusters, reader);
      const rendered = await Promise.all(
        candidates.map((c) => {
          const key = reader.renderKey(c);
          let rendering = renders.get(key);
          if (!rendering) {
            rendering = limit(() => reader.render(c));
            renders.set(key, rendering);
          }
          return rendering;
        }),
      );
      candidates.forEach((c, i) => {
        const r = rendered[i] as Awaited<ReturnType<SideReader['render']>>;
        const dest = c.spec['destination'] as { namespace?: unknown } | undefined;
        targets.push({
          appSet: o.name,
          name: c.name,
          cluster: c.cluster,
          clusterServer: c.cluster === null ? null : (servers.get(c.cluster) ?? null),
          namespace: typeof dest?.namespace === 'string' ? dest.namespace : '',
          repoURLs: sourceRepos(c.spec),
          digest: r.digest,
          objects: r.objects,
        });
      });
    } catch (err) {
      throw new PlanSideError(
        'appset-failed',
        `${at}: ApplicationSet ${o.name} (${o.file}): ${(err as Error).message}`,
        input.name,
        { cause: err },
      );
    }
  }
  refuseDuplicates(targets, at, input.name);
  return {
    side: {
      revision: input.revision,
      objects,
      policies: validation.policies,
      params: validation.params,
      targets,
      clusterLabels: new Map(clusters.map((c) => [c.name, c.labels])),
    },
    groups,
  };
}

/** The Applications an appset's generators yield over `clusters`, each with its cluster's name. */
function appSetCandidates(
  appSet: string,
  doc: unknown,
  clusters: ClusterInfo[],
  reader: SideReader,
): PlanCandidate[] {
  const result = generate(parseApplicationSet(doc), {
    clusters,
    repository: (repoURL, revision) => reader.repository(repoURL, revision),
  });
  const byServer = new Map(clusters.map((c) => [c.server, c.name]));
  return result.targets.map((t, i) => {
    const dest = t.application.spec.destination;
    const cluster = dest.name || (dest.server ? byServer.get(dest.server) : undefined) || null;
    return {
      appSet,
      name: t.application.metadata.name,
      cluster,
      spec: t.application.spec,
      at: `targets[${i}].spec`,
    };
  });
}

/**
 * What a render depends on, as the hub shares renders: the sources, so that targets differing only
 * in generator parameters the sources do not use (1,000 clusters, one directory) share one render.
 * A Helm chart also reads the Application (release name, namespace, project): a source that may be
 * a chart (`isChart`: its directory holds a Chart.yaml), or several sources, key on those too.
 */
export function sharedRenderKey(
  c: PlanCandidate,
  isChart: (repoURL: string, path: string, targetRevision: string) => boolean,
): string {
  const spec = c.spec;
  const sources = (Array.isArray(spec['sources']) ? spec['sources'] : [spec['source']]) as unknown[];
  const chart = sources.some((raw) => {
    if (typeof raw !== 'object' || raw === null) return true;
    const source = raw as Record<string, unknown>;
    if (source['chart'] !== undefined || source['helm'] !== undefined) return true;
    if (typeof source['repoURL'] !== 'string') return true;
    const path = typeof source['path'] === 'string' ? source['path'] : '';
    const revision = typeof source['targetRevision'] === 'string' ? source['targetRevision'] : '';
    return isChart(source['repoURL'], path, revision);
  });
  const dest = spec['destination'] as { namespace?: unknown } | undefined;
  return stableJson({
    sources,
    ...(chart || sources.length > 1
      ? { name: c.name, namespace: dest?.namespace ?? null, project: spec['project'] ?? null }
      : {}),
  });
}

/** JSON with object keys sorted, so that equal values give equal text. */
function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'object' && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

function sourceRepos(spec: Record<string, unknown>): string[] {
  const sources = (Array.isArray(spec['sources']) ? spec['sources'] : [spec['source']]) as unknown[];
  return sources.flatMap((s) => {
    const url = typeof s === 'object' && s !== null ? (s as { repoURL?: unknown }).repoURL : undefined;
    return typeof url === 'string' ? [url] : [];
  });
}

/** Runs at most `n` of the functions given at once, the others waiting their turn in order. */
function limiter(n: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async (fn) => {
    // A finishing call hands its slot to the next waiter, so a newcomer cannot take it in between.
    if (active >= n) await new Promise<void>((resolve) => waiting.push(resolve));
    else active++;
    try {
      return await fn();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
}

/** The hub refuses an expansion in which two targets share a name; so does the plan. */
function refuseDuplicates(targets: readonly PlannedTarget[], at: string, side: string): void {
  const seen = new Map<string, string>();
  for (const t of targets) {
    const other = seen.get(t.name);
    if (other !== undefined)
      throw new PlanSideError(
        'appset-failed',
        `${at}: two targets are named ${t.name} (ApplicationSet ${other} and ${t.appSet}); the hub refuses the expansion`,
        side,
      );
    seen.set(t.name, t.appSet);
  }
}
