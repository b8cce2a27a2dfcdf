-- A requested dry-run sync is stored as a sync run marked dryRun: history shows what it would do.
ALTER TABLE "SyncRun" ADD COLUMN "dryRun" BOOLEAN NOT NULL DEFAULT false;
