// A fleet commit's admission policies, bindings and params, written in the commit's transaction.
import { canonicalJson } from '@flotilla/manifests';
import type { FleetPolicy, FleetPolicyParam } from '@flotilla/fleet-config';
import type { AuditEntry } from '../audit/audit.service.js';
import { HubError } from '../common/hub-error.js';
import { toJson } from '../common/json.js';
import type { Prisma } from '../generated/prisma/client.js';

/** What the commit declares for the policy gate: policies, bindings and their params. */
export interface FleetPolicies {
  policies: FleetPolicy[];
  params: FleetPolicyParam[];
}

interface PolicyRow {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  document: unknown;
  file: string;
}

/** Who writes, for the audit events and the rows' provenance. */
export interface PolicyWriter {
  sourceId: string;
  repoUrl: string;
  commit: string;
  author: string;
}

const keyOf = (r: { apiVersion: string; kind: string; namespace: string; name: string }): string =>
  `${r.apiVersion}/${r.kind}/${r.namespace === '' ? '' : `${r.namespace}/`}${r.name}`;

function rowsOf(declared: FleetPolicies): PolicyRow[] {
  const policies = declared.policies.map((p) => ({
    apiVersion: p.object.apiVersion,
    kind: p.kind,
    namespace: '',
    name: p.name,
    document: p.object,
    file: p.file,
  }));
  const params = declared.params.map((p) => {
    const ns = p.object.metadata?.namespace;
    return {
      apiVersion: String(p.object.apiVersion),
      kind: String(p.object.kind),
      namespace: typeof ns === 'string' ? ns : '',
      name: p.name,
      document: p.object,
      file: p.file,
    };
  });
  return [...policies, ...params];
}

/**
 * Makes the source's policy objects exactly the commit's: created, updated (content or file) and
 * deleted, each an audit event (`admission-policy.created`…); an unchanged row keeps the commit that
 * last changed it, so the compiled set (cached by rows) stays warm across commits. An object another fleet source
 * declares refuses the commit, naming both. Returns whether anything changed.
 */
export async function applyFleetPolicies(
  tx: Prisma.TransactionClient,
  writer: PolicyWriter,
  declared: FleetPolicies,
  events: AuditEntry[],
): Promise<boolean> {
  const existing = await tx.admissionPolicyObject.findMany();
  const byKey = new Map(existing.map((r) => [keyOf(r), r]));
  const wanted = new Set<string>();
  let changed = false;
  const record = (verb: string, r: { kind: string; namespace: string; name: string }, file: string) => {
    changed = true;
    events.push({
      actor: `git:${writer.author}`,
      action: `admission-policy.${verb}`,
      scope: `admission-policy:${r.kind}/${r.namespace === '' ? '' : `${r.namespace}/`}${r.name}`,
      details: { commit: writer.commit, author: writer.author, file, repoUrl: writer.repoUrl },
    });
  };
  for (const row of rowsOf(declared)) {
    const key = keyOf(row);
    wanted.add(key);
    const current = byKey.get(key);
    const data = {
      document: toJson(row.document),
      fleetSourceId: writer.sourceId,
      sourceCommit: writer.commit,
      sourceFile: row.file,
    };
    if (current && current.fleetSourceId !== writer.sourceId)
      throw new HubError(
        409,
        'managed-elsewhere',
        `${row.kind} ${row.name} (${row.file}) is already declared by fleet source ${current.fleetSourceId} (${current.sourceFile}); nothing changed`,
        row.file,
      );
    if (!current) {
      const { file: _file, document: _document, ...id } = row;
      await tx.admissionPolicyObject.create({ data: { ...id, ...data } });
      record('created', row, row.file);
    } else if (
      current.sourceFile !== row.file ||
      canonicalJson(current.document) !== canonicalJson(row.document)
    ) {
      await tx.admissionPolicyObject.update({ where: { id: current.id }, data });
      record('updated', row, row.file);
    }
  }
  for (const r of existing)
    if (r.fleetSourceId === writer.sourceId && !wanted.has(keyOf(r))) {
      await tx.admissionPolicyObject.delete({ where: { id: r.id } });
      record('deleted', r, r.sourceFile);
    }
  return changed;
}
