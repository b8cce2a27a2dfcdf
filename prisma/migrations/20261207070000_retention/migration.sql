-- Retention (apps/hub/src/retention): a report's payload is trimmed after RETENTION_REPORT_PAYLOAD_DAYS
-- while its id stays for replays, so the payload may be null.
ALTER TABLE "ProcessedReport" ALTER COLUMN "payload" DROP NOT NULL;
-- Ids are deleted oldest first across every cluster.
CREATE INDEX "ProcessedReport_receivedAt_idx" ON "ProcessedReport"("receivedAt");
-- Payloads still to trim, oldest first: partial, so each batch starts at the first untrimmed row
-- instead of walking weeks of rows already trimmed (the schema cannot say WHERE; see the hub README).
CREATE INDEX "ProcessedReport_untrimmed_receivedAt_idx" ON "ProcessedReport"("receivedAt")
  WHERE "payload" IS NOT NULL;
-- Bundles are pruned oldest first.
CREATE INDEX "Bundle_createdAt_idx" ON "Bundle"("createdAt");
