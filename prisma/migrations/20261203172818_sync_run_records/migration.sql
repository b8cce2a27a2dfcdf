-- Sync history is a record: deleting a target (or its appset or cluster) no longer deletes its runs.
ALTER TABLE "SyncRun" DROP CONSTRAINT "SyncRun_targetId_fkey";

-- The names at the time of the run, so history reads the same after a rename, a move or a deletion.
ALTER TABLE "SyncRun" ADD COLUMN "targetName" TEXT NOT NULL DEFAULT '',
ADD COLUMN "clusterName" TEXT NOT NULL DEFAULT '',
ADD COLUMN "appSetName" TEXT NOT NULL DEFAULT '';

-- Backfill from the inventory as it is now (every existing run still has its target: the old
-- foreign key guaranteed it). One statement inside the migration's transaction: it rewrites every
-- run and holds their row locks until commit, so on a large history expect ingest to wait for it.
UPDATE "SyncRun" r SET "targetName" = t."name", "clusterName" = c."name", "appSetName" = a."name"
  FROM "Target" t, "Cluster" c, "ApplicationSet" a
 WHERE t."id" = r."targetId" AND c."id" = r."clusterId" AND a."id" = t."appSetId";

CREATE INDEX "SyncRun_targetName_startedAt_idx" ON "SyncRun"("targetName", "startedAt" DESC);
