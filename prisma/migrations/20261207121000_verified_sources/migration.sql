-- Verified sources (issue #25): a repository's signature requirement and allowed keys, their history,
-- and each commit's verdict under one key list.
ALTER TABLE "Repository" ADD COLUMN "verificationMode" TEXT NOT NULL DEFAULT 'none',
ADD COLUMN "allowedSigners" TEXT NOT NULL DEFAULT '',
ADD COLUMN "gpgKeys" TEXT NOT NULL DEFAULT '',
ADD COLUMN "verificationDigest" TEXT NOT NULL DEFAULT '',
ADD COLUMN "verificationManagedBy" TEXT;

CREATE TABLE "SourceVerification" (
    "repositoryId" TEXT NOT NULL,
    "commit" TEXT NOT NULL,
    "digest" TEXT NOT NULL,
    "mode" TEXT NOT NULL,
    "verified" BOOLEAN NOT NULL,
    "failedCommit" TEXT,
    "signer" TEXT NOT NULL,
    "message" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "SourceVerification_pkey" PRIMARY KEY ("repositoryId","commit","digest")
);

CREATE INDEX "SourceVerification_repositoryId_verified_createdAt_idx" ON "SourceVerification"("repositoryId", "verified", "createdAt");

ALTER TABLE "SourceVerification" ADD CONSTRAINT "SourceVerification_repositoryId_fkey" FOREIGN KEY ("repositoryId") REFERENCES "Repository"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "RepositoryVerificationChange" (
    "id" TEXT NOT NULL,
    "repositoryId" TEXT NOT NULL,
    "actor" TEXT NOT NULL,
    "mode" TEXT NOT NULL,
    "allowedSigners" TEXT NOT NULL,
    "gpgKeys" TEXT NOT NULL,
    "fingerprints" TEXT[],
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "RepositoryVerificationChange_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "RepositoryVerificationChange_repositoryId_createdAt_idx" ON "RepositoryVerificationChange"("repositoryId", "createdAt");

ALTER TABLE "RepositoryVerificationChange" ADD CONSTRAINT "RepositoryVerificationChange_repositoryId_fkey" FOREIGN KEY ("repositoryId") REFERENCES "Repository"("id") ON DELETE CASCADE ON UPDATE CASCADE;
