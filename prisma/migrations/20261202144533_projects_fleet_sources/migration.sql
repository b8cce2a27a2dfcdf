-- AlterTable
ALTER TABLE "ApplicationSet" ADD COLUMN "managedBy" TEXT NOT NULL DEFAULT 'api',
ADD COLUMN "project" TEXT NOT NULL DEFAULT 'default',
ADD COLUMN "sourceAuthor" TEXT,
ADD COLUMN "sourceCommit" TEXT,
ADD COLUMN "sourceFile" TEXT,
ADD COLUMN "sourceRepo" TEXT;

-- CreateTable
CREATE TABLE "Project" (
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
CREATE TABLE "FleetSource" (
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
CREATE UNIQUE INDEX "Project_name_key" ON "Project"("name");
CREATE UNIQUE INDEX "FleetSource_repoUrl_revision_path_key" ON "FleetSource"("repoUrl", "revision", "path");
