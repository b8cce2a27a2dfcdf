
-- CreateTable
CREATE TABLE "SyncWindow" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "spec" JSONB NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "deletedAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "SyncWindow_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SyncWindowVersion" (
    "id" TEXT NOT NULL,
    "windowId" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "change" TEXT NOT NULL,
    "spec" JSONB NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "actor" TEXT NOT NULL,
    "reason" TEXT NOT NULL DEFAULT '',
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "SyncWindowVersion_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "BreakGlass" (
    "id" SERIAL NOT NULL,
    "scope" TEXT NOT NULL,
    "scopeName" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "allowSyncOutsideWindows" BOOLEAN NOT NULL,
    "pauseSelfHeal" BOOLEAN NOT NULL,
    "openedBy" TEXT NOT NULL,
    "openedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "closedAt" TIMESTAMP(3),
    "closedBy" TEXT,
    "closeKind" TEXT,
    "closeReason" TEXT,

    CONSTRAINT "BreakGlass_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "BreakGlassChange" (
    "id" TEXT NOT NULL,
    "breakGlassId" INTEGER NOT NULL,
    "targetName" TEXT NOT NULL,
    "clusterName" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "resource" JSONB NOT NULL,
    "paths" TEXT[],
    "manager" TEXT,
    "at" TIMESTAMP(3) NOT NULL,
    "reportId" TEXT NOT NULL,

    CONSTRAINT "BreakGlassChange_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "SyncWindow_name_key" ON "SyncWindow"("name");

-- CreateIndex
CREATE UNIQUE INDEX "SyncWindowVersion_windowId_version_key" ON "SyncWindowVersion"("windowId", "version");

-- CreateIndex
CREATE INDEX "BreakGlass_closedAt_expiresAt_idx" ON "BreakGlass"("closedAt", "expiresAt");

-- CreateIndex
CREATE INDEX "BreakGlass_scope_scopeName_idx" ON "BreakGlass"("scope", "scopeName");

-- CreateIndex
CREATE UNIQUE INDEX "BreakGlassChange_reportId_key" ON "BreakGlassChange"("reportId");

-- CreateIndex
CREATE INDEX "BreakGlassChange_breakGlassId_at_idx" ON "BreakGlassChange"("breakGlassId", "at");

-- AddForeignKey
ALTER TABLE "SyncWindowVersion" ADD CONSTRAINT "SyncWindowVersion_windowId_fkey" FOREIGN KEY ("windowId") REFERENCES "SyncWindow"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "BreakGlassChange" ADD CONSTRAINT "BreakGlassChange_breakGlassId_fkey" FOREIGN KEY ("breakGlassId") REFERENCES "BreakGlass"("id") ON DELETE CASCADE ON UPDATE CASCADE;


