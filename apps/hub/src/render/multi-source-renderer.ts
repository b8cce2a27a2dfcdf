// Renders a multi-source Application: Git sources, `ref:` sources and charts together, as Argo CD does.
import { Injectable } from '@nestjs/common';
import {
  checkTreeEntries,
  DEFAULT_TREE_LIMITS,
  isManifestPath,
  ManifestError,
  symlinksOf,
  type ApplicationSource,
  type Capabilities,
  type GitSource,
  type TreeEntry,
} from '@flotilla/manifests';
import { GitMirrorsService } from '../sources/git/git-mirrors.service.js';
import { checkCheckoutSize, checkOutInto, inRenderWorkspace } from './render-checkouts.js';
import { readGitAsync, RenderError, translateManifestError } from './render-error.js';
import type { RenderApplication, Rendered, ResolvedSource } from './render-source.js';
import { RenderTools } from './render-tools.service.js';
import { rendererOf } from './renderer-choice.js';

interface Commit {
  repositoryId: string;
  revision: string;
}

/** The distinct commits the Git and `ref:` sources resolved to, by `<repositoryId>\0<revision>`. */
function commitsOf(sources: readonly ResolvedSource[]): Map<string, Commit> {
  const commits = new Map<string, Commit>();
  for (const r of sources) {
    if ('version' in r) continue;
    commits.set(commitId(r), { repositoryId: r.repositoryId, revision: r.revision });
  }
  return commits;
}

function commitId(c: Commit): string {
  return `${c.repositoryId}\0${c.revision}`;
}

/**
 * Every Git repository a source or a `ref:` names is checked out at the commit it resolved to (one
 * checkout per distinct commit), charts from Helm repositories are fetched at their version, and
 * `$ref/…` value files are read from the ref's checkout. A source that is a kustomization is refused
 * (the hub builds kustomizations as single sources only).
 */
@Injectable()
export class MultiSourceRenderer {
  constructor(
    private readonly mirrors: GitMirrorsService,
    private readonly tools: RenderTools,
  ) {}

  /**
   * Every check that needs no checkout, done before rendering, with one listing per distinct commit.
   * Answers whether any source is a chart.
   */
  async check(sources: readonly ResolvedSource[], where: string): Promise<{ anyChart: boolean }> {
    const entriesOf = new Map<string, TreeEntry[]>();
    for (const [id, c] of commitsOf(sources)) {
      const entries = await readGitAsync(where, () =>
        this.mirrors.mirrors.listEntries(c.repositoryId, c.revision),
      );
      checkCheckoutSize(entries, where);
      entriesOf.set(id, entries);
    }
    let anyChart = false;
    for (const r of sources) {
      if ('version' in r) {
        anyChart = true;
        continue;
      }
      if (r.source.kind === 'ref') continue;
      const entries = entriesOf.get(commitId(r)) ?? [];
      if (checkGitSource(r.source, r.revision, entries, where) === 'helm') anyChart = true;
    }
    return { anyChart };
  }

  /** Renders the sources through the same code as `flotilla render` (renderApplication). */
  async render(
    sources: readonly ResolvedSource[],
    application: RenderApplication,
    capabilities: Capabilities,
    where: string,
    judging: { record: boolean },
  ): Promise<Rendered> {
    return inRenderWorkspace(async (work) => {
      const dirs = new Map<string, string>();
      let n = 0;
      for (const [id, c] of commitsOf(sources)) {
        dirs.set(id, await checkOutInto(this.mirrors.mirrors, work, `repo-${n++}`, c, where));
      }
      // A source names its repository by URL and revision; each resolves to the checkout of its commit.
      const byRequest = new Map<string, { dir: string; revision: string }>();
      for (const r of sources) {
        if ('version' in r) continue;
        const dir = dirs.get(commitId(r)) ?? '';
        byRequest.set(`${r.source.repoURL}\0${r.source.targetRevision}`, { dir, revision: r.revision });
      }
      const applicationSources: ApplicationSource[] = sources.map((r) =>
        // The version fixed by the expansion, so every target of it renders the same one.
        'version' in r ? { ...r.source, targetRevision: r.version.version } : r.source,
      );
      return this.tools.renderThrough(
        application,
        applicationSources,
        capabilities,
        {
          dirOf: (repoURL, targetRevision, at) => {
            const found = byRequest.get(`${repoURL}\0${targetRevision}`);
            if (!found)
              throw new ManifestError(
                'manifest-invalid-source',
                at,
                `${repoURL} is not a source of this application`,
              );
            return found.dir;
          },
          revisionOf: (repoURL, targetRevision) =>
            byRequest.get(`${repoURL}\0${targetRevision}`)?.revision ?? targetRevision,
        },
        [...dirs.values()],
        where,
        'the sources render no Kubernetes objects',
        judging,
      );
    });
  }
}

/**
 * A Git source's directory has files, is not a kustomization, and (when plain) keeps to the limits
 * of a plain render read from the mirror. Answers the renderer it takes.
 */
function checkGitSource(
  s: GitSource,
  revision: string,
  entries: TreeEntry[],
  where: string,
): 'plain' | 'helm' {
  const under = entries.filter((e) => s.path === '' || e.path.startsWith(`${s.path}/`));
  if (under.length === 0) {
    throw new RenderError(
      'path-not-found',
      `${s.at}.path: "${s.path || '.'}" has no files at commit ${revision.slice(0, 12)} of ${s.repoURL}`,
      where,
    );
  }
  const renderer = rendererOf(
    under.map((e) => e.path),
    s.path,
    s.helm !== undefined,
    s.kustomize !== undefined,
  );
  if (renderer === 'kustomize') {
    throw new RenderError(
      'unsupported-source',
      `${s.at}.path: "${s.path || '.'}" is a kustomization; kustomize in a multi-source application is not rendered by the hub yet (use a single source for it)`,
      where,
    );
  }
  if (renderer === 'plain') {
    translateManifestError(where, () =>
      checkTreeEntries(
        under.filter((e) => e.kind !== 'file' || isManifestPath(e.path)),
        DEFAULT_TREE_LIMITS,
        symlinksOf(entries),
      ),
    );
  }
  return renderer;
}
