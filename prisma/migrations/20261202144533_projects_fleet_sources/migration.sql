-- AlterTable
-- IF NOT EXISTS throughout: a migration written in parallel (rollouts_pins) picked up these statements too.
ALTER TABLE "ApplicationSet" ADD COLUMN IF NOT EXISTS "managedBy" TEXT NOT NULL DEFAULT 'api',
ADD COLUMN IF NOT EXISTS "project" TEXT NOT NULL DEFAULT 'default',
ADD COLUMN IF NOT EXISTS "sourceAuthor" TEXT,
ADD COLUMN IF NOT EXISTS "sourceCommit" TEXT,
ADD COLUMN IF NOT EXISTS "sourceFile" TEXT,
ADD COLUMN IF NOT EXISTS "sourceRepo" TEXT;

-- CreateTable
CREATE TABLE IF NOT EXISTS "Project" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "document" JSONB NOT NULL,
    "managedBy" TEXT NOT NULL DEFAULT 'api',
    "sourceRepo" TEXT,
    "sourceCommit" TEXT,
    "sourceAuthor" TEXT,
    "sourceFile" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Project_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE IF NOT EXISTS "FleetSource" (
    "id" TEXT NOT NULL,
    "repoUrl" TEXT NOT NULL,
    "revision" TEXT NOT NULL DEFAULT 'HEAD',
    "path" TEXT NOT NULL DEFAULT '',
    "status" TEXT NOT NULL DEFAULT 'Pending',
    "error" JSONB,
    "appliedCommit" TEXT,
    "appliedAuthor" TEXT,
    "appliedAt" TIMESTAMP(3),
    "seenCommit" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "FleetSource_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX IF NOT EXISTS "Project_name_key" ON "Project"("name");
CREATE UNIQUE INDEX IF NOT EXISTS "FleetSource_repoUrl_revision_path_key" ON "FleetSource"("repoUrl", "revision", "path");
