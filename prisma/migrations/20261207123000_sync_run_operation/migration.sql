-- The requested sync a run carried out, so `flotilla sync --wait` follows the run of its own request
-- (and history links a run to who asked for it).
ALTER TABLE "SyncRun" ADD COLUMN "operationId" TEXT;

CREATE INDEX "SyncRun_operationId_idx" ON "SyncRun"("operationId");
