// The bundles an agent fetches: only those its cluster's targets are given, a foreign digest refused and audited.
import { Injectable } from '@nestjs/common';
import type { Bundle } from '@flotilla/contract';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import { AuditLog } from '../audit/audit.service.js';
import { BundleBodyCache } from './bundle-body-cache.js';

@Injectable()
export class AgentBundles {
  private readonly cache = new BundleBodyCache();
  /** Reads of bundle bodies under way, by digest (see bodiesOf). */
  private readonly reading = new Map<string, Promise<Map<string, string>>>();

  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
  ) {}

  /**
   * Only bundles one of the cluster's targets wants: another cluster's bundle is a 404, not a 403
   * (an agent learns nothing about what else exists), and the attempt is audited.
   */
  async bundle(cluster: { id: string; name: string }, digest: string): Promise<Bundle> {
    const wanted = await this.db.prisma.target.findFirst({
      where: {
        clusterId: cluster.id,
        OR: [{ releasedDigest: digest }, { pin: { bundleDigest: digest } }],
      },
      select: { id: true },
    });
    const bundle = wanted ? await this.db.prisma.bundle.findUnique({ where: { digest } }) : null;
    if (!bundle) {
      if (!wanted) {
        // Usually a probe; rarely a bundle replaced between the agent's two requests, which
        // `assignedElsewhere: false` and the next assignments poll tell apart.
        const elsewhere = await this.db.prisma.target.count({ where: { bundleDigest: digest } });
        await this.audit.record({
          actor: `agent:${cluster.name}`,
          action: 'agent.access-denied',
          scope: `cluster:${cluster.name}`,
          details: { resource: 'bundle', digest, assignedElsewhere: elsewhere > 0 },
        });
      }
      throw new HubError(404, 'not-found', `bundle ${digest} is not assigned to this cluster`);
    }
    return {
      digest: bundle.digest,
      source: { repoUrl: bundle.repoUrl, revision: bundle.revision, path: bundle.path },
      manifests: bundle.manifests as Bundle['manifests'],
    };
  }

  /**
   * `POST bundles/batch`: the bundles of `digests` this cluster's targets want (released or pinned,
   * the single endpoint's rule), as the response body (JSON text). Each bundle's JSON is read from
   * PostgreSQL (printed by it, never parsed and printed again here) once per hub process and then
   * served from `BundleBodyCache`. Digests not served are listed in `refused`; a foreign one is
   * audited as the single endpoint does. `served`: the digests this replica knows the cluster's
   * current assignments serve (AgentGatewayService.knownDigests); when they cover every digest
   * asked, which ones the cluster may read is not asked of the database.
   */
  async bundleBatch(
    cluster: { id: string; name: string },
    digests: readonly string[],
    served?: ReadonlySet<string>,
  ): Promise<string> {
    const asked = [...new Set(digests)];
    const wanted = asked.every((d) => served?.has(d)) ? asked : await this.wantedBy(cluster.id, asked);
    const bodies = await this.bodiesOf(wanted);
    // Wanted but not stored (yet) is refused too, as before; only the foreign ones are audited.
    const refused = asked.filter((d) => !bodies.has(d));
    if (refused.length > 0) await this.auditRefusedBundles(cluster, refused);
    const answered = wanted.flatMap((d) => bodies.get(d) ?? []);
    return `{"bundles":[${answered.join(',')}],"refused":${JSON.stringify(refused)}}`;
  }

  /**
   * The stored bodies of `digests` (absent: not stored), from the cache, else from PostgreSQL. A
   * digest already being read for another request is waited for, not read again: the clusters a
   * release wakes ask for the same new bundles within milliseconds, before the first read is back.
   */
  private async bodiesOf(digests: readonly string[]): Promise<Map<string, string>> {
    const bodies = new Map<string, string>();
    const reads = new Set<Promise<Map<string, string>>>();
    const toRead: string[] = [];
    for (const digest of digests) {
      const body = this.cache.get(digest);
      const reading = this.reading.get(digest);
      if (body !== undefined) bodies.set(digest, body);
      else if (reading) reads.add(reading);
      else toRead.push(digest);
    }
    if (toRead.length > 0) {
      const read: Promise<Map<string, string>> = this.readBodies(toRead).finally(() => {
        for (const d of toRead) if (this.reading.get(d) === read) this.reading.delete(d);
      });
      for (const d of toRead) this.reading.set(d, read);
      reads.add(read);
    }
    for (const read of await Promise.all(reads))
      for (const digest of digests) {
        const body = read.get(digest);
        if (body !== undefined) bodies.set(digest, body);
      }
    return bodies;
  }

  /** One statement for the bodies of `digests`, each put in the cache. */
  private async readBodies(digests: readonly string[]): Promise<Map<string, string>> {
    const rows = await this.db.sql.query<{ digest: string; head: string; manifests: string }>(
      `SELECT b.digest,
              json_build_object('digest', b.digest,
                                'source', json_build_object('repoUrl', b."repoUrl", 'revision', b.revision,
                                                            'path', b.path))::text AS head,
              b.manifests::text AS manifests
         FROM "Bundle" b
        WHERE b.digest = ANY($1::text[])`,
      [digests],
    );
    const bodies = new Map<string, string>();
    for (const r of rows) {
      // head is `{"digest":…,"source":{…}}`: the manifests go in before its closing brace.
      const body = `${r.head.slice(0, -1)},"manifests":${r.manifests}}`;
      this.cache.set(r.digest, body);
      bodies.set(r.digest, body);
    }
    return bodies;
  }

  /** Which of `digests` one of the cluster's targets wants (released or pinned). */
  private async wantedBy(clusterId: string, digests: string[]): Promise<string[]> {
    const rows = await this.db.sql.query<{ digest: string }>(
      `SELECT d.digest
         FROM unnest($2::text[]) AS d(digest)
        WHERE EXISTS (SELECT 1 FROM "Target" t LEFT JOIN "TargetPin" p ON p."targetId" = t.id
                       WHERE t."clusterId" = $1
                         AND (t."releasedDigest" = d.digest OR p."bundleDigest" = d.digest))`,
      [clusterId, digests],
    );
    return rows.map((r) => r.digest);
  }

  /** Audits the refused digests no target of the cluster wants (a wanted one is only not stored yet). */
  private async auditRefusedBundles(cluster: { id: string; name: string }, refused: string[]): Promise<void> {
    const rows = await this.db.sql.query<{ digest: string; wanted: boolean; elsewhere: boolean }>(
      `SELECT d.digest,
              EXISTS (SELECT 1 FROM "Target" t LEFT JOIN "TargetPin" p ON p."targetId" = t.id
                       WHERE t."clusterId" = $1
                         AND (t."releasedDigest" = d.digest OR p."bundleDigest" = d.digest)) AS wanted,
              EXISTS (SELECT 1 FROM "Target" t WHERE t."bundleDigest" = d.digest) AS elsewhere
         FROM unnest($2::text[]) AS d(digest)`,
      [cluster.id, refused],
    );
    for (const r of rows.filter((x) => !x.wanted)) {
      await this.audit.record({
        actor: `agent:${cluster.name}`,
        action: 'agent.access-denied',
        scope: `cluster:${cluster.name}`,
        details: { resource: 'bundle', digest: r.digest, assignedElsewhere: r.elsewhere },
      });
    }
  }
}
