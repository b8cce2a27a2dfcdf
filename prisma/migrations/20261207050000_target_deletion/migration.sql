-- A target deleted with its objects: the tombstone its agent gets, who asked, when, why, and how it went.
ALTER TABLE "Target" ADD COLUMN "deletionId" TEXT,
  ADD COLUMN "deletionBy" TEXT,
  ADD COLUMN "deletionReason" TEXT,
  ADD COLUMN "deletionAt" TIMESTAMP(3),
  ADD COLUMN "deletionState" TEXT,
  ADD COLUMN "deletionMessage" TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX "Target_deletionId_key" ON "Target"("deletionId");
