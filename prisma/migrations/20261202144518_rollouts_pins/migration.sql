-- AlterTable
ALTER TABLE "Target" ADD COLUMN     "releasedAt" TIMESTAMP(3),
ADD COLUMN     "releasedDigest" TEXT,
ADD COLUMN     "releasedRevision" TEXT;

-- CreateTable
CREATE TABLE "Rollout" (
    "id" TEXT NOT NULL,
    "appSetId" TEXT NOT NULL,
    "revision" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'Progressing',
    "strategy" JSONB NOT NULL,
    "stepIndex" INTEGER NOT NULL DEFAULT 0,
    "stepStartedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "bakeStartedAt" TIMESTAMP(3),
    "gateOpened" BOOLEAN NOT NULL DEFAULT false,
    "progress" JSONB NOT NULL DEFAULT '{}',
    "message" TEXT NOT NULL DEFAULT '',
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,
    "finishedAt" TIMESTAMP(3),

    CONSTRAINT "Rollout_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "FailedRevision" (
    "appSetId" TEXT NOT NULL,
    "revision" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "FailedRevision_pkey" PRIMARY KEY ("appSetId","revision")
);

-- CreateTable
CREATE TABLE "TargetPin" (
    "targetId" TEXT NOT NULL,
    "revision" TEXT NOT NULL,
    "bundleDigest" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "actor" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "TargetPin_pkey" PRIMARY KEY ("targetId")
);

-- CreateIndex
CREATE INDEX "Rollout_status_idx" ON "Rollout"("status");

-- CreateIndex
CREATE UNIQUE INDEX "Rollout_appSetId_revision_key" ON "Rollout"("appSetId", "revision");

-- CreateIndex
CREATE INDEX "TargetPin_expiresAt_idx" ON "TargetPin"("expiresAt");

-- AddForeignKey
ALTER TABLE "Rollout" ADD CONSTRAINT "Rollout_appSetId_fkey" FOREIGN KEY ("appSetId") REFERENCES "ApplicationSet"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "FailedRevision" ADD CONSTRAINT "FailedRevision_appSetId_fkey" FOREIGN KEY ("appSetId") REFERENCES "ApplicationSet"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "TargetPin" ADD CONSTRAINT "TargetPin_targetId_fkey" FOREIGN KEY ("targetId") REFERENCES "Target"("id") ON DELETE CASCADE ON UPDATE CASCADE;



-- Targets that existed before rollouts were released as soon as they were expanded: keep serving them.
UPDATE "Target" SET "releasedRevision" = "desiredRevision", "releasedDigest" = "bundleDigest", "releasedAt" = "updatedAt" WHERE "bundleDigest" IS NOT NULL;
