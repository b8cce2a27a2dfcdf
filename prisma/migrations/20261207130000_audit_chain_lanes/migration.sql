-- The audit chain in lanes: each event belongs to one of several hash chains, each with its own
-- advisory lock, so writers no longer queue on one lock. Existing events and checkpoints are lane 0,
-- the one chain they already form. ADD COLUMN with a constant default rewrites no rows (PostgreSQL
-- 11+); the index build reads the table once (see the hub README on migrations of large tables).
ALTER TABLE "AuditEvent" ADD COLUMN "lane" SMALLINT NOT NULL DEFAULT 0;
ALTER TABLE "AuditCheckpoint" ADD COLUMN "lane" SMALLINT NOT NULL DEFAULT 0;

CREATE INDEX "AuditEvent_lane_id_idx" ON "AuditEvent"("lane", "id");
CREATE INDEX "AuditCheckpoint_lane_throughId_idx" ON "AuditCheckpoint"("lane", "throughId");
