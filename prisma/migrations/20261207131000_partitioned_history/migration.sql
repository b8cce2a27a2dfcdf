-- Sync runs and audit events become monthly RANGE partitions, so retention drops a month instead of
-- deleting its rows one by one (apps/hub/README.md, Retention).
--
-- Partition keys are the hub's clock, never an agent's: SyncRun by "createdAt" (when the hub stored
-- the run; "startedAt" is the agent's clock and may be anything), AuditEvent by "at" (stamped by the
-- hub). A DEFAULT partition takes any row no month covers, so an insert never fails for want of a
-- partition; the hub's partition keeper creates the coming months ahead (on boot and with every
-- retention run) and moves any row it finds in DEFAULT into its month.
--
-- A primary key of a partitioned table must hold the partition key: ("id", "createdAt") and
-- ("id", "at"). Ids stay unique (uuids; a sequence). "agentReportId" loses its unique index (it could
-- not hold across partitions): ProcessedReport's primary key is what makes a report count once, and
-- ingest skips a run whose report id is already stored (see ingest-statements.ts).
--
-- On a large database: this copies every row in this migration's one transaction, holding an ACCESS
-- EXCLUSIVE lock on both tables until it commits (history, ingest and every audited write wait).
-- Measured on PostgreSQL 15 on 2 shared cores: 500,000 sync runs and 100,000 audit events over a year
-- took 31 s with every index rebuilt, so plan on about a minute per million rows, and upgrade a large
-- hub in a maintenance window (apps/hub/README.md, Migrations and locks on large databases).

-- Creates "<parent>_pYYYY_MM" for every month from `first` through `last`, and "<parent>_default".
CREATE FUNCTION "pg_temp"."create_month_partitions"(parent text, first timestamp, last timestamp)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  m timestamp := date_trunc('month', first);
BEGIN
  WHILE m <= last LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                   parent || '_p' || to_char(m, 'YYYY_MM'), parent, m, m + interval '1 month');
    m := m + interval '1 month';
  END LOOP;
  EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', parent || '_default', parent);
END $$;

-- SyncRun ----------------------------------------------------------------------------------------

CREATE TABLE "SyncRun_partitioned" (
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
    "appSetId" TEXT,
    "targetName" TEXT NOT NULL DEFAULT '',
    "clusterName" TEXT NOT NULL DEFAULT '',
    "appSetName" TEXT NOT NULL DEFAULT '',
    "dryRun" BOOLEAN NOT NULL DEFAULT false,
    "operationId" TEXT
) PARTITION BY RANGE ("createdAt");

SELECT "pg_temp"."create_month_partitions"(
  'SyncRun_partitioned',
  LEAST((SELECT min("createdAt") FROM "SyncRun"), CURRENT_TIMESTAMP::timestamp),
  GREATEST((SELECT max("createdAt") FROM "SyncRun"), CURRENT_TIMESTAMP::timestamp + interval '2 months'));

-- Rows first, indexes after: one sorted build per index instead of a tree growing row by row.
INSERT INTO "SyncRun_partitioned" ("id", "targetId", "clusterId", "revision", "bundleDigest", "trigger",
  "outcome", "message", "startedAt", "finishedAt", "resources", "agentReportId", "createdAt", "appSetId",
  "targetName", "clusterName", "appSetName", "dryRun", "operationId")
SELECT "id", "targetId", "clusterId", "revision", "bundleDigest", "trigger",
  "outcome", "message", "startedAt", "finishedAt", "resources", "agentReportId", "createdAt", "appSetId",
  "targetName", "clusterName", "appSetName", "dryRun", "operationId"
FROM "SyncRun";

DROP TABLE "SyncRun";
ALTER TABLE "SyncRun_partitioned" RENAME TO "SyncRun";
DO $$
DECLARE p record;
BEGIN
  FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = '"SyncRun"'::regclass LOOP
    EXECUTE format('ALTER TABLE %I RENAME TO %I', p.relname, replace(p.relname, 'SyncRun_partitioned_', 'SyncRun_'));
  END LOOP;
END $$;

ALTER TABLE "SyncRun" ADD CONSTRAINT "SyncRun_pkey" PRIMARY KEY ("id", "createdAt");
CREATE INDEX "SyncRun_agentReportId_idx" ON "SyncRun"("agentReportId");
CREATE INDEX "SyncRun_createdAt_idx" ON "SyncRun"("createdAt");
CREATE INDEX "SyncRun_targetId_startedAt_idx" ON "SyncRun"("targetId", "startedAt" DESC);
CREATE INDEX "SyncRun_targetName_startedAt_idx" ON "SyncRun"("targetName", "startedAt" DESC);
CREATE INDEX "SyncRun_clusterId_startedAt_idx" ON "SyncRun"("clusterId", "startedAt" DESC);
CREATE INDEX "SyncRun_startedAt_id_idx" ON "SyncRun"("startedAt" DESC, "id" DESC);
CREATE INDEX "SyncRun_appSetId_startedAt_idx" ON "SyncRun"("appSetId", "startedAt" DESC);
CREATE INDEX "SyncRun_appSetId_outcome_startedAt_idx" ON "SyncRun"("appSetId", "outcome", "startedAt" DESC);
CREATE INDEX "SyncRun_operationId_idx" ON "SyncRun"("operationId");

-- AuditEvent -------------------------------------------------------------------------------------

CREATE TABLE "AuditEvent_partitioned" (
    "id" BIGINT NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "details" JSONB NOT NULL DEFAULT '{}',
    "prevHash" TEXT,
    "hash" TEXT,
    "lane" SMALLINT NOT NULL DEFAULT 0
) PARTITION BY RANGE ("at");

SELECT "pg_temp"."create_month_partitions"(
  'AuditEvent_partitioned',
  LEAST((SELECT min("at") FROM "AuditEvent"), CURRENT_TIMESTAMP::timestamp),
  GREATEST((SELECT max("at") FROM "AuditEvent"), CURRENT_TIMESTAMP::timestamp + interval '2 months'));

INSERT INTO "AuditEvent_partitioned" ("id", "at", "actor", "action", "scope", "details", "prevHash", "hash", "lane")
SELECT "id", "at", "actor", "action", "scope", "details", "prevHash", "hash", "lane" FROM "AuditEvent";

-- The sequence goes on where it was: ids are the chain's order, and checkpoints name them.
ALTER SEQUENCE "AuditEvent_id_seq" OWNED BY "AuditEvent_partitioned"."id";
ALTER TABLE "AuditEvent_partitioned" ALTER COLUMN "id" SET DEFAULT nextval('"AuditEvent_id_seq"');
DROP TABLE "AuditEvent";
ALTER TABLE "AuditEvent_partitioned" RENAME TO "AuditEvent";
DO $$
DECLARE p record;
BEGIN
  FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = '"AuditEvent"'::regclass LOOP
    EXECUTE format('ALTER TABLE %I RENAME TO %I', p.relname, replace(p.relname, 'AuditEvent_partitioned_', 'AuditEvent_'));
  END LOOP;
END $$;

ALTER TABLE "AuditEvent" ADD CONSTRAINT "AuditEvent_pkey" PRIMARY KEY ("id", "at");
CREATE INDEX "AuditEvent_at_idx" ON "AuditEvent"("at");
CREATE INDEX "AuditEvent_scope_at_idx" ON "AuditEvent"("scope", "at");
CREATE INDEX "AuditEvent_action_at_idx" ON "AuditEvent"("action" text_pattern_ops, "at");
CREATE INDEX "AuditEvent_actor_id_idx" ON "AuditEvent"("actor", "id");
CREATE INDEX "AuditEvent_lane_id_idx" ON "AuditEvent"("lane", "id");
