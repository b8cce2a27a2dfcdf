import {
  type AuditActor,
  type Page,
  syncWindowSchema,
  type SyncWindow,
  type SyncWindowVersionView,
  type SyncWindowView,
} from '@flotilla/contract';
import { pageArgs, pageOf, type PageQuery } from '../../common/name-page.js';
import { Injectable } from '@nestjs/common';
import { windowsForTarget, type NamedSyncWindow } from '@flotilla/windows';
import { Database } from '../../db/database.js';
import { HubError } from '../../common/hub-error.js';
import { toJson } from '../../common/json.js';
import { AuditLog } from '../../audit/audit.service.js';
import { ClusterWakeups } from '../../wakeups/cluster-wakeups.service.js';
import type { Prisma, SyncWindow as SyncWindowRow } from '../../generated/prisma/client.js';
import type { WindowInput } from './window-input.js';

type Tx = Prisma.TransactionClient;

/**
 * Sync windows as first-class objects. Every change writes a new immutable version (who, when, why)
 * and an audit event in the same transaction, then wakes the clusters whose targets the window
 * picked before or picks now, so their agents fetch assignments carrying the new windows.
 */
@Injectable()
export class WindowsService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly wakeups: ClusterWakeups,
  ) {}

  async create(name: string, input: WindowInput, actor: AuditActor): Promise<SyncWindowView> {
    const existing = await this.db.prisma.syncWindow.findUnique({ where: { name } });
    if (existing && !existing.deletedAt) {
      throw new HubError(
        409,
        'already-exists',
        `sync window "${name}" already exists; PUT /api/v1/windows/${name} changes it`,
        'name',
      );
    }
    await this.checkProjects(input.projects);
    // A deleted name comes back as the next version of the same window, so its history stays whole.
    const row = await this.write(existing, name, input, actor, 'created');
    await this.wake([scoped(input)]);
    return view(row);
  }

  async update(name: string, input: WindowInput, actor: AuditActor): Promise<SyncWindowView> {
    const existing = await this.live(name);
    await this.checkProjects(input.projects);
    const row = await this.write(existing, name, input, actor, 'updated');
    await this.wake([scopedOf(existing), scoped(input)]);
    return view(row);
  }

  async remove(name: string, reason: string, actor: AuditActor): Promise<void> {
    const existing = await this.live(name);
    const window = scopedOf(existing);
    await this.db.prisma.$transaction(async (tx) => {
      const version = await this.bump(tx, existing.id, existing.version);
      await tx.syncWindow.update({ where: { id: existing.id }, data: { version, deletedAt: new Date() } });
      await tx.syncWindowVersion.create({
        data: {
          windowId: existing.id,
          version,
          change: 'deleted',
          spec: toJson({ ...window.window, projects: window.projects }),
          description: existing.description,
          actor,
          reason,
        },
      });
      await this.audit.record(
        { actor, action: 'window.deleted', scope: `window:${name}`, details: { version, reason } },
        tx,
      );
    });
    await this.wake([window]);
  }

  async list(): Promise<SyncWindowView[]> {
    const rows = await this.db.prisma.syncWindow.findMany({
      where: { deletedAt: null },
      orderBy: { name: 'asc' },
    });
    return rows.map(view);
  }

  /** One page of (live) windows by name (see common/name-page.ts). */
  async page(q: PageQuery): Promise<Page<SyncWindowView>> {
    const { where, take } = pageArgs(q);
    const page = pageOf(
      await this.db.prisma.syncWindow.findMany({
        where: { deletedAt: null, ...where },
        take,
        orderBy: { name: 'asc' },
      }),
      q,
    );
    return { items: page.rows.map(view), nextCursor: page.nextCursor };
  }

  async get(name: string): Promise<SyncWindowView> {
    return view(await this.live(name));
  }

  /** Every version, newest first; a deleted window's history is still there. */
  async history(name: string): Promise<SyncWindowVersionView[]> {
    const row = await this.db.prisma.syncWindow.findUnique({
      where: { name },
      include: { versions: { orderBy: { version: 'desc' } } },
    });
    if (!row) throw HubError.notFound('sync window', name);
    return row.versions.map((v) => ({
      version: v.version,
      change: v.change as SyncWindowVersionView['change'],
      window: syncWindowSchema.parse(v.spec),
      projects: projectsOf(v.spec),
      description: v.description,
      actor: v.actor,
      reason: v.reason,
      at: v.at.toISOString(),
    }));
  }

  /** Every live window, for assignments and target status. */
  async named(): Promise<NamedSyncWindow[]> {
    const rows = await this.db.prisma.syncWindow.findMany({
      where: { deletedAt: null },
      select: { name: true, spec: true },
    });
    return rows.map((r) => ({
      name: r.name,
      window: syncWindowSchema.parse(r.spec),
      projects: projectsOf(r.spec),
    }));
  }

  private async live(name: string): Promise<SyncWindowRow> {
    const row = await this.db.prisma.syncWindow.findUnique({ where: { name } });
    if (!row || row.deletedAt) throw HubError.notFound('sync window', name);
    return row;
  }

  private async write(
    existing: SyncWindowRow | null,
    name: string,
    input: WindowInput,
    actor: AuditActor,
    change: 'created' | 'updated',
  ): Promise<SyncWindowRow> {
    return this.db.prisma.$transaction(async (tx) => {
      const version = existing ? await this.bump(tx, existing.id, existing.version) : 1;
      const data = {
        version,
        // The scope is kept beside the window's own fields, so each version records it too.
        spec: toJson({ ...input.window, projects: input.projects }),
        description: input.description,
        deletedAt: null,
      };
      const row = existing
        ? await tx.syncWindow.update({ where: { id: existing.id }, data })
        : await tx.syncWindow.create({ data: { name, ...data } });
      await tx.syncWindowVersion.create({
        data: {
          windowId: row.id,
          version,
          change,
          spec: data.spec,
          description: input.description,
          actor,
          reason: input.reason,
        },
      });
      await this.audit.record(
        {
          actor,
          action: `window.${change}`,
          scope: `window:${name}`,
          details: { version, reason: input.reason, window: input.window, projects: input.projects },
        },
        tx,
      );
      return row;
    });
  }

  /**
   * The next version number, claimed with a compare-and-set on the current one: two people
   * changing one window at once get versions n+1 and a 409, never two versions n+1.
   */
  private async bump(tx: Tx, id: string, current: number): Promise<number> {
    const claimed = await tx.syncWindow.updateMany({
      where: { id, version: current },
      data: { version: current + 1 },
    });
    if (claimed.count !== 1) {
      throw new HubError(
        409,
        'conflict',
        'the sync window was changed at the same time; read it and try again',
      );
    }
    return current + 1;
  }

  /** A window scoped to projects that do not exist would govern nothing: refused, naming the project. */
  private async checkProjects(projects: string[]): Promise<void> {
    const wanted = projects.filter((p) => p !== 'default');
    if (wanted.length === 0) return;
    const found = new Set(
      (
        await this.db.prisma.project.findMany({ where: { name: { in: wanted } }, select: { name: true } })
      ).map((p) => p.name),
    );
    const missing = projects.findIndex((p) => p !== 'default' && !found.has(p));
    if (missing >= 0) {
      throw new HubError(
        400,
        'invalid-request',
        `projects[${missing}]: no project named "${projects[missing]}" (create it first, or leave projects empty for every project)`,
        `projects[${missing}]`,
      );
    }
  }

  /** Wakes every cluster running a target that one of these windows picks. */
  private async wake(windows: NamedSyncWindow[]): Promise<void> {
    const targets = await this.db.prisma.target.findMany({
      select: {
        name: true,
        namespace: true,
        clusterId: true,
        cluster: { select: { name: true } },
        appSet: { select: { project: true } },
      },
    });
    const clusters = targets
      .filter(
        (t) =>
          windowsForTarget(windows, {
            application: t.name,
            namespace: t.namespace,
            cluster: t.cluster.name,
            project: t.appSet.project,
          }).length > 0,
      )
      .map((t) => t.clusterId);
    await this.wakeups.notify(clusters);
  }
}

function stored(row: SyncWindowRow): SyncWindow {
  return syncWindowSchema.parse(row.spec);
}

/** Windows written before projects existed have none: they govern every project. */
function projectsOf(spec: unknown): string[] {
  const projects = (spec as { projects?: unknown } | null)?.projects;
  return Array.isArray(projects) ? projects.filter((p): p is string => typeof p === 'string') : [];
}

function scoped(input: WindowInput): NamedSyncWindow {
  return { name: '', window: input.window, projects: input.projects };
}

function scopedOf(row: SyncWindowRow): NamedSyncWindow {
  return { name: row.name, window: stored(row), projects: projectsOf(row.spec) };
}

function view(row: SyncWindowRow): SyncWindowView {
  return {
    name: row.name,
    version: row.version,
    ...stored(row),
    projects: projectsOf(row.spec),
    description: row.description,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
