-- AlterTable
ALTER TABLE "Repository" ADD COLUMN     "credentialCiphertext" TEXT,
ADD COLUMN     "credentialType" TEXT,
ADD COLUMN     "credentialUsername" TEXT;

-- CreateTable
CREATE TABLE "RenderRecord" (
    "key" TEXT NOT NULL,
    "repositoryId" TEXT NOT NULL,
    "revision" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "options" JSONB NOT NULL DEFAULT '{}',
    "renderer" TEXT NOT NULL,
    "digest" TEXT NOT NULL,
    "deterministic" BOOLEAN NOT NULL DEFAULT true,
    "conflictingDigest" TEXT,
    "renderedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "checkedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "RenderRecord_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE INDEX "RenderRecord_repositoryId_revision_idx" ON "RenderRecord"("repositoryId", "revision");

-- AddForeignKey
ALTER TABLE "RenderRecord" ADD CONSTRAINT "RenderRecord_repositoryId_fkey" FOREIGN KEY ("repositoryId") REFERENCES "Repository"("id") ON DELETE CASCADE ON UPDATE CASCADE;


