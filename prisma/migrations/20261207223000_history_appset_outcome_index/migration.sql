-- An appset's runs of one outcome, in the order history pages them: (startedAt, id) after the
-- equality columns. History asks for each outcome of an appset separately ("outcome" = x, merged),
-- because PostgreSQL 15 gives up an index's order for `"outcome" = ANY(…)` on its second column; the
-- old (appSetId, outcome, startedAt) index lacked "id", so the pages walked every month's
-- (startedAt, id) index instead, filtering the whole fleet's runs (issue 16). This one replaces it.
--
-- On a partitioned table PostgreSQL refuses CREATE INDEX CONCURRENTLY on the parent, and this
-- migration builds the index on every month under a SHARE lock (ingest waits; minutes on tens of
-- millions of runs). On a large hub, build it beforehand without blocking writes, a month at a time,
-- as apps/hub/README.md, "Migrations and locks on large databases", shows; IF NOT EXISTS then finds
-- it. Dropping the old index is a catalog change, but takes an ACCESS EXCLUSIVE lock on "SyncRun" and
-- every month (brief, yet it waits behind running queries: set lock_timeout when run by hand).
CREATE INDEX IF NOT EXISTS "SyncRun_appSetId_outcome_startedAt_id_idx" ON "SyncRun"("appSetId", "outcome", "startedAt" DESC, "id" DESC);

DROP INDEX IF EXISTS "SyncRun_appSetId_outcome_startedAt_idx";
