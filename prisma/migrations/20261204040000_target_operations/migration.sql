-- Syncs people ask for (POST /api/v1/targets/:name/sync). A new table: no lock on existing ones.
CREATE TABLE "TargetOperation" (
    "id" TEXT NOT NULL,
    "targetId" TEXT NOT NULL,
    "targetName" TEXT NOT NULL,
    "clusterId" TEXT NOT NULL,
    "kind" TEXT NOT NULL DEFAULT 'sync',
    "options" JSONB NOT NULL DEFAULT '{}',
    "requestedBy" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'Pending',
    "message" TEXT NOT NULL DEFAULT '',
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "finishedAt" TIMESTAMP(3),
    CONSTRAINT "TargetOperation_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "TargetOperation_targetId_state_idx" ON "TargetOperation"("targetId", "state");
CREATE INDEX "TargetOperation_clusterId_state_idx" ON "TargetOperation"("clusterId", "state");
