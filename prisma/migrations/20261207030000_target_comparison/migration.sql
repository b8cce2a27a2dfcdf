-- The agent's latest comparison per target (GET /api/v1/targets/:name/diff, sync status of manual
-- targets). A new table: no lock on existing ones beyond the foreign key's.
CREATE TABLE "TargetComparison" (
    "targetId" TEXT NOT NULL,
    "observedAt" TIMESTAMP(3) NOT NULL,
    "revision" TEXT NOT NULL,
    "bundleDigest" TEXT NOT NULL,
    "inSync" BOOLEAN NOT NULL,
    "compared" INTEGER NOT NULL,
    "truncated" BOOLEAN NOT NULL DEFAULT false,
    "objects" JSONB NOT NULL DEFAULT '[]',
    "reportId" TEXT NOT NULL,
    CONSTRAINT "TargetComparison_pkey" PRIMARY KEY ("targetId")
);
ALTER TABLE "TargetComparison" ADD CONSTRAINT "TargetComparison_targetId_fkey" FOREIGN KEY ("targetId") REFERENCES "Target"("id") ON DELETE CASCADE ON UPDATE CASCADE;
