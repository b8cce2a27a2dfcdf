-- CreateTable
CREATE TABLE "NotificationDestination" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "config" JSONB NOT NULL DEFAULT '{}',
    "sealedSecret" TEXT,
    "createdBy" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "NotificationDestination_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "NotificationPolicy" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "spec" JSONB NOT NULL,
    "managedBy" TEXT NOT NULL DEFAULT 'api',
    "fleetSourceId" TEXT,
    "sourceCommit" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "NotificationPolicy_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "NotificationDelivery" (
    "id" TEXT NOT NULL,
    "dedupeKey" TEXT NOT NULL,
    "groupKey" TEXT NOT NULL,
    "destinationId" TEXT NOT NULL,
    "policyName" TEXT NOT NULL,
    "trigger" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'Collecting',
    "events" JSONB NOT NULL DEFAULT '[]',
    "eventCount" INTEGER NOT NULL DEFAULT 0,
    "sendAfter" TIMESTAMP(3) NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "lastError" TEXT,
    "sentAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "NotificationDelivery_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "NotificationOnce" (
    "key" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "NotificationOnce_pkey" PRIMARY KEY ("key")
);

-- CreateTable
CREATE TABLE "NotificationCursor" (
    "id" TEXT NOT NULL,
    "lastAuditId" BIGINT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "NotificationCursor_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "NotificationDestination_name_key" ON "NotificationDestination"("name");

-- CreateIndex
CREATE UNIQUE INDEX "NotificationPolicy_name_key" ON "NotificationPolicy"("name");

-- CreateIndex
CREATE INDEX "NotificationDelivery_groupKey_destinationId_status_idx" ON "NotificationDelivery"("groupKey", "destinationId", "status");

-- CreateIndex
CREATE INDEX "NotificationDelivery_status_sendAfter_idx" ON "NotificationDelivery"("status", "sendAfter");

-- CreateIndex
CREATE INDEX "NotificationDelivery_createdAt_idx" ON "NotificationDelivery"("createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "NotificationDelivery_dedupeKey_destinationId_key" ON "NotificationDelivery"("dedupeKey", "destinationId");



-- A hub that already has an audit log starts notifying from now on, not from its history.
INSERT INTO "NotificationCursor" ("id", "lastAuditId", "updatedAt")
SELECT 'audit', COALESCE(MAX("id"), 0), CURRENT_TIMESTAMP FROM "AuditEvent";
