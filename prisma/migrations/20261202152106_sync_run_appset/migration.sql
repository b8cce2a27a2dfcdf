-- AlterTable
ALTER TABLE "SyncRun" ADD COLUMN     "appSetId" TEXT;

-- Runs stored before the column existed: their target's appset.
UPDATE "SyncRun" s SET "appSetId" = t."appSetId" FROM "Target" t WHERE t."id" = s."targetId";

-- CreateIndex
CREATE INDEX "SyncRun_appSetId_startedAt_idx" ON "SyncRun"("appSetId", "startedAt" DESC);

-- CreateIndex
CREATE INDEX "SyncRun_appSetId_outcome_startedAt_idx" ON "SyncRun"("appSetId", "outcome", "startedAt" DESC);
