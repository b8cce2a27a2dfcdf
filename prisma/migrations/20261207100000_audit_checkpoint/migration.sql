-- Audit archive and pruning (apps/hub/src/audit/audit-archive.service.ts): where the chain starts once
-- the events before it were exported and pruned.
CREATE TABLE "AuditCheckpoint" (
    "id" SERIAL NOT NULL,
    "throughId" BIGINT NOT NULL,
    "hash" TEXT NOT NULL,
    "events" INTEGER NOT NULL,
    "sha256" TEXT NOT NULL,
    "prunedBy" TEXT NOT NULL,
    "prunedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "AuditCheckpoint_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "AuditCheckpoint_throughId_key" ON "AuditCheckpoint"("throughId");
