-- Rollback by revert at the hub: write access per repository (sealed, like the read credentials),
-- the pull requests it opened, and the revert a pin waits for.
ALTER TABLE "Repository" ADD COLUMN "writeCredentialType" TEXT,
ADD COLUMN "writeCredentialUsername" TEXT,
ADD COLUMN "writeCredentialCiphertext" TEXT,
ADD COLUMN "hostApiTokenCiphertext" TEXT,
ADD COLUMN "hostKind" TEXT,
ADD COLUMN "hostApiUrl" TEXT,
ADD COLUMN "hostRepository" TEXT,
ADD COLUMN "revertBaseBranch" TEXT;

ALTER TABLE "TargetPin" ADD COLUMN "revertUrl" TEXT;

CREATE TABLE "RevertRequest" (
    "id" TEXT NOT NULL,
    "repositoryId" TEXT NOT NULL,
    "branch" TEXT NOT NULL,
    "appSetName" TEXT NOT NULL,
    "targetName" TEXT,
    "toRevision" TEXT NOT NULL,
    "headRevision" TEXT NOT NULL,
    "commits" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'Opening',
    "revertCommit" TEXT,
    "url" TEXT,
    "number" INTEGER,
    "actor" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "RevertRequest_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "RevertRequest_repositoryId_branch_key" ON "RevertRequest"("repositoryId", "branch");
