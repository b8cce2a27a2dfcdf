import { randomUUID } from 'node:crypto';
import { toJson } from '../common/json.js';
import type { Database } from '../db/database.js';
import type { Prisma } from '../generated/prisma/client.js';
import type { DesiredTarget, ExpansionPlan } from './expansion-plan.js';

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
 * Makes the stored targets of `appSetId` match the plan with set-based statements: one
 * INSERT … SELECT FROM unnest(…) and one UPDATE … FROM unnest(…) per chunk, DELETE by id. Returns
 * the clusters whose desired set changed. Runs inside the caller's transaction; reads nothing.
 */
export async function writePlan(tx: Tx, appSetId: string, plan: ExpansionPlan): Promise<Set<string>> {
  const touched = new Set<string>();
  // A moved target's old row goes first (its name is unique), then it is created afresh on its new
  // cluster: a new id with default status, so neither history nor status carries over.
  for (const chunk of chunks(plan.move)) {
    await tx.target.deleteMany({ where: { id: { in: chunk.map((m) => m.current.id) } } });
    await insertTargets(
      tx,
      appSetId,
      chunk.map((m) => m.desired),
    );
    for (const m of chunk) touched.add(m.current.clusterId).add(m.desired.clusterId);
  }
  for (const chunk of chunks(plan.create)) {
    await insertTargets(tx, appSetId, chunk);
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

const json = (v: unknown) => JSON.stringify(toJson(v));
/** SQL NULL (not JSON null) for a single-source target. */
const sourcesJson = (d: DesiredTarget) => (d.sources === null ? null : json(d.sources));

/**
 * The columns an expansion owns; status columns (health, last sync) keep their defaults. Raw SQL
 * because Prisma's createMany spent about 1.5 ms a row here (30 s for 20,000 targets); this is
 * one statement per 1,000 rows. Ids are made here, as Prisma's @default(uuid()) would.
 */
async function insertTargets(tx: Tx, appSetId: string, rows: DesiredTarget[]): Promise<void> {
  const col = <T>(pick: (d: DesiredTarget) => T) => rows.map(pick);
  await tx.$executeRaw`
    INSERT INTO "Target" ("id", "name", "appSetId", "clusterId", "namespace", "repoUrl", "sourcePath",
      "targetRevision", "desiredRevision", "sources", "bundleDigest", "syncPolicy", "params", "updatedAt")
    SELECT v."id", v."name", ${appSetId}, v."clusterId", v."namespace", v."repoUrl", v."sourcePath",
      v."targetRevision", v."desiredRevision", v."sources"::jsonb, v."bundleDigest", v."syncPolicy"::jsonb,
      v."params"::jsonb, (now() AT TIME ZONE 'UTC')
    FROM unnest(
      ${rows.map(() => randomUUID())}::text[],
      ${col((d) => d.name)}::text[],
      ${col((d) => d.clusterId)}::text[],
      ${col((d) => d.namespace)}::text[],
      ${col((d) => d.repoUrl)}::text[],
      ${col((d) => d.sourcePath)}::text[],
      ${col((d) => d.targetRevision)}::text[],
      ${col((d) => d.desiredRevision)}::text[],
      ${col((d) => sourcesJson(d))}::text[],
      ${col((d) => d.bundleDigest)}::text[],
      ${col((d) => json(d.syncPolicy))}::text[],
      ${col((d) => json(d.params))}::text[]
    ) AS v("id", "name", "clusterId", "namespace", "repoUrl", "sourcePath", "targetRevision",
           "desiredRevision", "sources", "bundleDigest", "syncPolicy", "params")`;
}

async function updateTargets(tx: Tx, rows: ExpansionPlan['update']): Promise<void> {
  const col = <T>(pick: (d: DesiredTarget) => T) => rows.map((u) => pick(u.desired));
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
      "sources" = v."sources"::jsonb,
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
      ${col((d) => sourcesJson(d))}::text[],
      ${col((d) => d.bundleDigest)}::text[],
      ${col((d) => json(d.syncPolicy))}::text[],
      ${col((d) => json(d.params))}::text[]
    ) AS v("id", "clusterId", "namespace", "repoUrl", "sourcePath", "targetRevision",
           "desiredRevision", "sources", "bundleDigest", "syncPolicy", "params")
    WHERE t."id" = v."id"`;
}

function* chunks<T>(items: T[]): Generator<T[]> {
  for (let i = 0; i < items.length; i += CHUNK) yield items.slice(i, i + CHUNK);
}
