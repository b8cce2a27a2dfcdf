import { Injectable } from '@nestjs/common';
import { groupOf, type KubeObject } from '@flotilla/contract';
import {
  UNRESTRICTED_PROJECT,
  checkDestination,
  checkObject,
  checkRepository,
  literalRepoFields,
  projectNameOf,
  projectObjectSchema,
  restrictionsFor,
  scopeFromManifests,
  type ProjectCluster,
  type ProjectSpec,
  type ProjectViolation,
} from '@flotilla/fleet-config';
import { Database } from '../db/database.js';

/** A refusal with the path of the offending input, as the expander records it on the appset. */
export interface ProjectRefusal {
  code: string;
  message: string;
  path: string;
}

/**
 * The project rules one appset's expansion is held to. Built once per expansion; every check is
 * pure except `checkBundle`, which reads the rendered manifests.
 */
export class ProjectGate {
  constructor(
    readonly name: string,
    readonly spec: ProjectSpec,
    /** True for the implicit `default` project: nothing to check. */
    readonly unrestricted: boolean,
    private readonly db: Database,
  ) {}

  /**
   * The repository and destination of one generated target; `at` prefixes the paths, `source` is
   * the source the repository is named by (`spec.sources[1]` for one of several).
   */
  checkTarget(
    at: string,
    repoURL: string,
    cluster: ProjectCluster,
    namespace: string,
    source = 'spec.source',
  ): ProjectRefusal | null {
    if (this.unrestricted) return null;
    const repo = checkRepository(this.name, this.spec, repoURL);
    if (repo) return refusal(repo, `${at}.${source}.repoURL`);
    const dest = checkDestination(this.name, this.spec, cluster, namespace);
    if (dest) return refusal(dest, `${at}.spec.destination`);
    return null;
  }

  /** Repositories written literally in the document (git generators, a fixed template source). */
  checkLiteralRepositories(document: unknown): ProjectRefusal | null {
    if (this.unrestricted) return null;
    for (const { repoURL, path } of literalRepoFields(document)) {
      const repo = checkRepository(this.name, this.spec, repoURL);
      if (repo) return refusal(repo, path);
    }
    return null;
  }

  /**
   * Every object of a rendered bundle whose scope the manifests tell (built-in kinds, CRDs in the
   * bundle); the agent checks the rest against its API server's discovery before applying.
   */
  async checkBundle(
    at: string,
    digest: string,
    cluster: ProjectCluster,
    namespace: string,
  ): Promise<ProjectRefusal | null> {
    if (this.unrestricted) return null;
    const bundle = await this.db.prisma.bundle.findUnique({ where: { digest }, select: { manifests: true } });
    const manifests = (bundle?.manifests ?? []) as KubeObject[];
    const restrictions = restrictionsFor(this.name, this.spec, cluster);
    for (const m of manifests) {
      const group = groupOf(m.apiVersion);
      const scope = scopeFromManifests(group, m.kind, manifests);
      if (scope === undefined) continue;
      const violation = checkObject(restrictions, {
        group,
        kind: m.kind,
        name: m.metadata.name,
        namespaced: scope === 'Namespaced',
        namespace: m.metadata.namespace ?? namespace,
      });
      if (violation) return refusal(violation, `${at}.spec.source.path (bundle ${digest})`);
    }
    return null;
  }
}

function refusal(v: ProjectViolation, path: string): ProjectRefusal {
  return { code: v.code, message: v.message, path };
}

/**
 * Read side of projects: which project an appset belongs to and what it allows, for the expander
 * (checks before targets change). The agent gateway narrows stored projects to each cluster itself
 * (`specOfRow` + `restrictionsFor`, read once per burst of assignments).
 */
@Injectable()
export class ProjectPolicy {
  constructor(private readonly db: Database) {}

  /** The gate for an appset document, or a refusal when its project is malformed or does not exist. */
  async gateFor(document: unknown): Promise<ProjectGate | ProjectRefusal> {
    const named = projectNameOf(document);
    if ('error' in named) return { code: 'invalid-project', message: named.error, path: named.path };
    const spec = await this.specOf(named.name);
    if (spec === null)
      return {
        code: 'project-not-found',
        message: `project '${named.name}' does not exist; POST /api/v1/projects (or add it to the fleet repository) first`,
        path: named.path,
      };
    return new ProjectGate(named.name, spec ?? UNRESTRICTED_PROJECT, spec === undefined, this.db);
  }

  /** A stored project's spec; undefined for `default` when not stored (allows everything); null when unknown. */
  private async specOf(name: string): Promise<ProjectSpec | undefined | null> {
    const row = await this.db.prisma.project.findUnique({ where: { name } });
    if (row) return specOfRow(row.document);
    return name === 'default' ? undefined : null;
  }
}

/** Stored documents were validated on the way in; parsing again applies the schema's defaults. */
export function specOfRow(document: unknown): ProjectSpec {
  return projectObjectSchema.parse(document).spec;
}
