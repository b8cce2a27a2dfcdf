-- The batch of a sync asked for many targets at once, as a column (read by GET /api/v1/operations?batchId=)
-- instead of a key inside "options"; rows written with the key keep their batch.
ALTER TABLE "TargetOperation" ADD COLUMN "batchId" TEXT;
UPDATE "TargetOperation" SET "batchId" = "options"->>'batchId', "options" = "options" - 'batchId'
  WHERE "options" ? 'batchId';
CREATE INDEX "TargetOperation_batchId_idx" ON "TargetOperation"("batchId");
