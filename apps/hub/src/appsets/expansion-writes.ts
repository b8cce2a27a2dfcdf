import { toJson } from '../common/json.js';
import type { Database } from '../db/database.js';
import type { Prisma } from '../generated/prisma/client.js';
import type { DesiredTarget, ExpansionPlan } from './appset-expander.service.js';

type Tx = Prisma.TransactionClient;

/**
 * Rows per statement. 1,000 targets × 12 columns stays far below PostgreSQL's 65,535 bind
 * parameters, and a statement that size costs about what one row did in round trips.
 */
const CHUNK = 1000;

/** The first target among `names` that another appset owns, if any; one query however many names. */
export async function findNameClash(
  db: Database,
  names: string[],
  appSetId: string,
): Promise<{ target: string; appSet: string } | undefined> {
  if (names.length === 0) return undefined;
  const rows = await db.prisma.$queryRaw<{ target: string; appSet: string }[]>`
    SELECT t."name" AS "target", a."name" AS "appSet"
    FROM "Target" t JOIN "ApplicationSet" a ON a."id" = t."appSetId"
    WHERE t."name" = ANY(${names}::text[]) AND t."appSetId" <> ${appSetId}
    ORDER BY t."name"
    LIMIT 1`;
  return rows[0];
}

/**
 * Makes the stored targets of `appSetId` match the plan with set-based statements: INSERTs of
 * many rows, one UPDATE … FROM unnest(…) per chunk, DELETE by id. Returns the clusters whose
 * desired set changed. Runs inside the caller's transaction; reads nothing.
 */
export async function writePlan(tx: Tx, appSetId: string, plan: ExpansionPlan): Promise<Set<string>> {
  const touched = new Set<string>();
  for (const chunk of chunks(plan.create)) {
    await tx.target.createMany({ data: chunk.map((d) => ({ name: d.name, appSetId, ...targetRow(d) })) });
    for (const d of chunk) touched.add(d.clusterId);
  }
  for (const chunk of chunks(plan.update)) {
    await updateTargets(tx, chunk);
    for (const u of chunk) touched.add(u.current.clusterId).add(u.desired.clusterId);
  }
  for (const chunk of chunks(plan.delete)) {
    await tx.target.deleteMany({ where: { id: { in: chunk.map((t) => t.id) } } });
    for (const t of chunk) touched.add(t.clusterId);
  }
  return touched;
}

/** The columns an expansion owns; status columns (health, last sync) are the agents'. */
function targetRow(d: DesiredTarget) {
  return {
    clusterId: d.clusterId,
    namespace: d.namespace,
    repoUrl: d.repoUrl,
    sourcePath: d.sourcePath,
    targetRevision: d.targetRevision,
    desiredRevision: d.desiredRevision,
    bundleDigest: d.bundleDigest,
    syncPolicy: toJson(d.syncPolicy),
    params: toJson(d.params),
  };
}

async function updateTargets(tx: Tx, rows: ExpansionPlan['update']): Promise<void> {
  const col = <T>(pick: (d: DesiredTarget) => T) => rows.map((u) => pick(u.desired));
  const json = (v: unknown) => JSON.stringify(v ?? null);
  // "updatedAt" is what Prisma's @updatedAt would write: the current time in UTC, as Prisma stores
  // every timestamp in these columns.
  await tx.$executeRaw`
    UPDATE "Target" AS t SET
      "clusterId" = v."clusterId",
      "namespace" = v."namespace",
      "repoUrl" = v."repoUrl",
      "sourcePath" = v."sourcePath",
      "targetRevision" = v."targetRevision",
      "desiredRevision" = v."desiredRevision",
      "bundleDigest" = v."bundleDigest",
      "syncPolicy" = v."syncPolicy"::jsonb,
      "params" = v."params"::jsonb,
      "updatedAt" = (now() AT TIME ZONE 'UTC')
    FROM unnest(
      ${rows.map((u) => u.current.id)}::text[],
      ${col((d) => d.clusterId)}::text[],
      ${col((d) => d.namespace)}::text[],
      ${col((d) => d.repoUrl)}::text[],
      ${col((d) => d.sourcePath)}::text[],
      ${col((d) => d.targetRevision)}::text[],
      ${col((d) => d.desiredRevision)}::text[],
      ${col((d) => d.bundleDigest)}::text[],
      ${col((d) => json(d.syncPolicy))}::text[],
      ${col((d) => json(d.params))}::text[]
    ) AS v("id", "clusterId", "namespace", "repoUrl", "sourcePath", "targetRevision",
           "desiredRevision", "bundleDigest", "syncPolicy", "params")
    WHERE t."id" = v."id"`;
}

function* chunks<T>(items: T[]): Generator<T[]> {
  for (let i = 0; i < items.length; i += CHUNK) yield items.slice(i, i + CHUNK);
}
