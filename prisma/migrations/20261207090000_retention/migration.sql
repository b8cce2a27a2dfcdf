-- Retention (apps/hub/src/retention): a report's payload is trimmed after RETENTION_REPORT_PAYLOAD_DAYS
-- while its id stays for replays, so the payload may be null.
ALTER TABLE "ProcessedReport" ALTER COLUMN "payload" DROP NOT NULL;
-- Ids are deleted oldest first across every cluster.
CREATE INDEX IF NOT EXISTS "ProcessedReport_receivedAt_idx" ON "ProcessedReport"("receivedAt");
-- Payloads still to trim, oldest first: partial, so each batch starts at the first untrimmed row
-- instead of walking weeks of rows already trimmed (the schema cannot say WHERE; see the hub README).
CREATE INDEX IF NOT EXISTS "ProcessedReport_untrimmed_receivedAt_idx" ON "ProcessedReport"("receivedAt")
  WHERE "payload" IS NOT NULL;
-- Bundles are pruned oldest first. IF NOT EXISTS: on a large database build these CONCURRENTLY by
-- hand first (hub README, "Migrations and locks on large databases"); this then finds them.
CREATE INDEX IF NOT EXISTS "Bundle_createdAt_idx" ON "Bundle"("createdAt");
-- How far report ids were deleted (kind "reportIds"): ingest drops reports observed before it.
CREATE TABLE "RetentionWatermark" (
    "kind" TEXT NOT NULL,
    "before" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "RetentionWatermark_pkey" PRIMARY KEY ("kind")
);
