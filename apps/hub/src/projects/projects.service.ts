import type { AuditActor } from '@flotilla/contract';
import { pageArgs, pageOf, type PageQuery } from '../common/name-page.js';
import { Injectable } from '@nestjs/common';
import { projectObjectSchema, type ProjectObject } from '@flotilla/fleet-config';
import { Database } from '../db/database.js';
import { HubError, parseInput } from '../common/hub-error.js';
import { toJson } from '../common/json.js';
import { AuditLog } from '../audit/audit.service.js';
import { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';
import type { Project } from '../generated/prisma/client.js';
import { FleetOwnership } from '../ownership/fleet-ownership.service.js';
import { sourceView } from '../ownership/git-managed.js';
import { ExpansionRequests } from '../wakeups/expansion-requests.service.js';
import type { ProjectView } from '@flotilla/contract';

/** Projects created, replaced and deleted through the API (Git-managed ones are refused here). */
@Injectable()
export class ProjectsService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly expansions: ExpansionRequests,
    private readonly wakeups: ClusterWakeups,
    private readonly ownership: FleetOwnership,
  ) {}

  /** Create or replace by name. Validated first; the appsets naming it are re-expanded against it. */
  async apply(
    body: unknown,
    actor: AuditActor,
  ): Promise<{ created: boolean; project: ReturnType<typeof view> }> {
    const doc: ProjectObject = parseInput(projectObjectSchema, body, 'Project');
    const name = doc.metadata.name;
    const existing = await this.db.prisma.project.findUnique({ where: { name } });
    if (existing) await this.ownership.checkEdit('Project', name, actor);
    const row = await this.db.prisma.$transaction(async (tx) => {
      const r = existing
        ? await tx.project.update({ where: { id: existing.id }, data: { document: toJson(doc) } })
        : await tx.project.create({ data: { name, document: toJson(doc) } });
      await this.audit.record(
        {
          actor,
          action: existing ? 'project.updated' : 'project.created',
          scope: `project:${name}`,
          details: { spec: doc.spec },
        },
        tx,
      );
      return r;
    });
    await this.reconsider(name);
    return { created: !existing, project: view(row) };
  }

  async list() {
    const rows = await this.db.prisma.project.findMany({ orderBy: { name: 'asc' } });
    return rows.map(view);
  }

  /** One page of projects by name (see common/name-page.ts). */
  async page(q: PageQuery) {
    const { where, take } = pageArgs(q);
    const page = pageOf(await this.db.prisma.project.findMany({ where, take, orderBy: { name: 'asc' } }), q);
    return { items: page.rows.map(view), nextCursor: page.nextCursor };
  }

  async get(name: string) {
    const row = await this.db.prisma.project.findUnique({ where: { name } });
    if (!row) throw HubError.notFound('project', name);
    return view(row);
  }

  /** Refused while an appset names the project: its targets would lose their bounds. */
  async remove(name: string, actor: AuditActor): Promise<void> {
    const row = await this.db.prisma.project.findUnique({ where: { name } });
    if (!row) throw HubError.notFound('project', name);
    await this.ownership.checkEdit('Project', name, actor);
    const users = await this.db.prisma.applicationSet.findMany({
      where: { project: name },
      select: { name: true },
      orderBy: { name: 'asc' },
    });
    if (users.length > 0)
      throw new HubError(
        409,
        'project-in-use',
        `project "${name}" is used by appset(s) ${users.map((u) => u.name).join(', ')}; move or delete them first`,
      );
    await this.db.prisma.$transaction(async (tx) => {
      await tx.project.delete({ where: { id: row.id } });
      await this.audit.record(
        { actor, action: 'project.deleted', scope: `project:${name}`, details: {} },
        tx,
      );
    });
  }

  /**
   * After a project changed: its appsets expand again (a now-violating one goes to Error, its
   * targets untouched) and the clusters running them re-read their assignments (new restrictions).
   */
  async reconsider(name: string): Promise<void> {
    const appsets = await this.db.prisma.applicationSet.findMany({
      where: { project: name },
      select: { id: true, targets: { select: { clusterId: true } } },
    });
    for (const a of appsets) await this.expansions.requestExpand(a.id);
    await this.wakeups.notify(appsets.flatMap((a) => a.targets.map((t) => t.clusterId)));
  }
}

function view(r: Project): ProjectView {
  return {
    name: r.name,
    source: sourceView(r),
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
    document: r.document,
  };
}
