-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "Cluster" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "server" TEXT NOT NULL DEFAULT '',
    "labels" JSONB NOT NULL DEFAULT '{}',
    "annotations" JSONB NOT NULL DEFAULT '{}',
    "credentialHash" TEXT,
    "credentialExpiresAt" TIMESTAMP(3),
    "credentialRevokedAt" TIMESTAMP(3),
    "registeredAt" TIMESTAMP(3),
    "agentVersion" TEXT,
    "lastSeenAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Cluster_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "BootstrapToken" (
    "id" TEXT NOT NULL,
    "tokenHash" TEXT NOT NULL,
    "clusterId" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "usedAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "BootstrapToken_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Repository" (
    "id" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'Pending',
    "error" TEXT,
    "lastFetchedAt" TIMESTAMP(3),
    "lastAttemptAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Repository_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "RepositoryRef" (
    "repositoryId" TEXT NOT NULL,
    "ref" TEXT NOT NULL,
    "sha" TEXT NOT NULL,
    "resolvedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "RepositoryRef_pkey" PRIMARY KEY ("repositoryId","ref")
);

-- CreateTable
CREATE TABLE "ApplicationSet" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "apiVersion" TEXT NOT NULL,
    "spec" JSONB NOT NULL,
    "repoUrls" TEXT[],
    "status" TEXT NOT NULL DEFAULT 'Pending',
    "error" JSONB,
    "lastExpandedAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ApplicationSet_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Target" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "appSetId" TEXT NOT NULL,
    "clusterId" TEXT NOT NULL,
    "namespace" TEXT NOT NULL,
    "repoUrl" TEXT NOT NULL,
    "sourcePath" TEXT NOT NULL,
    "targetRevision" TEXT NOT NULL,
    "desiredRevision" TEXT NOT NULL,
    "bundleDigest" TEXT,
    "syncPolicy" JSONB NOT NULL,
    "params" JSONB NOT NULL DEFAULT '{}',
    "health" TEXT NOT NULL DEFAULT 'Unknown',
    "healthMessage" TEXT NOT NULL DEFAULT '',
    "lastSyncedRevision" TEXT,
    "lastSyncedDigest" TEXT,
    "lastSyncedAt" TIMESTAMP(3),
    "lastReportAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Target_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Bundle" (
    "digest" TEXT NOT NULL,
    "manifests" JSONB NOT NULL,
    "repoUrl" TEXT NOT NULL,
    "revision" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Bundle_pkey" PRIMARY KEY ("digest")
);

-- CreateTable
CREATE TABLE "SyncRun" (
    "id" TEXT NOT NULL,
    "targetId" TEXT NOT NULL,
    "clusterId" TEXT NOT NULL,
    "revision" TEXT NOT NULL,
    "bundleDigest" TEXT NOT NULL,
    "trigger" TEXT NOT NULL,
    "outcome" TEXT NOT NULL,
    "message" TEXT NOT NULL DEFAULT '',
    "startedAt" TIMESTAMP(3) NOT NULL,
    "finishedAt" TIMESTAMP(3) NOT NULL,
    "resources" JSONB NOT NULL DEFAULT '[]',
    "agentReportId" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "SyncRun_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ProcessedReport" (
    "id" TEXT NOT NULL,
    "clusterId" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "targetId" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "receivedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ProcessedReport_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AuditEvent" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "details" JSONB NOT NULL DEFAULT '{}',
    "prevHash" TEXT,
    "hash" TEXT,

    CONSTRAINT "AuditEvent_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "Cluster_name_key" ON "Cluster"("name");

-- CreateIndex
CREATE UNIQUE INDEX "Cluster_credentialHash_key" ON "Cluster"("credentialHash");

-- CreateIndex
CREATE UNIQUE INDEX "BootstrapToken_tokenHash_key" ON "BootstrapToken"("tokenHash");

-- CreateIndex
CREATE INDEX "BootstrapToken_clusterId_idx" ON "BootstrapToken"("clusterId");

-- CreateIndex
CREATE UNIQUE INDEX "Repository_url_key" ON "Repository"("url");

-- CreateIndex
CREATE UNIQUE INDEX "ApplicationSet_name_key" ON "ApplicationSet"("name");

-- CreateIndex
CREATE INDEX "ApplicationSet_repoUrls_idx" ON "ApplicationSet" USING GIN ("repoUrls");

-- CreateIndex
CREATE UNIQUE INDEX "Target_name_key" ON "Target"("name");

-- CreateIndex
CREATE INDEX "Target_appSetId_idx" ON "Target"("appSetId");

-- CreateIndex
CREATE INDEX "Target_clusterId_idx" ON "Target"("clusterId");

-- CreateIndex
CREATE INDEX "Target_bundleDigest_idx" ON "Target"("bundleDigest");

-- CreateIndex
CREATE UNIQUE INDEX "SyncRun_agentReportId_key" ON "SyncRun"("agentReportId");

-- CreateIndex
CREATE INDEX "SyncRun_targetId_startedAt_idx" ON "SyncRun"("targetId", "startedAt" DESC);

-- CreateIndex
CREATE INDEX "SyncRun_clusterId_startedAt_idx" ON "SyncRun"("clusterId", "startedAt" DESC);

-- CreateIndex
CREATE INDEX "ProcessedReport_clusterId_receivedAt_idx" ON "ProcessedReport"("clusterId", "receivedAt");

-- CreateIndex
CREATE INDEX "AuditEvent_at_idx" ON "AuditEvent"("at");

-- CreateIndex
CREATE INDEX "AuditEvent_scope_at_idx" ON "AuditEvent"("scope", "at");

-- CreateIndex
CREATE INDEX "AuditEvent_action_at_idx" ON "AuditEvent"("action", "at");

-- AddForeignKey
ALTER TABLE "BootstrapToken" ADD CONSTRAINT "BootstrapToken_clusterId_fkey" FOREIGN KEY ("clusterId") REFERENCES "Cluster"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RepositoryRef" ADD CONSTRAINT "RepositoryRef_repositoryId_fkey" FOREIGN KEY ("repositoryId") REFERENCES "Repository"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Target" ADD CONSTRAINT "Target_appSetId_fkey" FOREIGN KEY ("appSetId") REFERENCES "ApplicationSet"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Target" ADD CONSTRAINT "Target_clusterId_fkey" FOREIGN KEY ("clusterId") REFERENCES "Cluster"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SyncRun" ADD CONSTRAINT "SyncRun_targetId_fkey" FOREIGN KEY ("targetId") REFERENCES "Target"("id") ON DELETE CASCADE ON UPDATE CASCADE;


