-- When the agent observed the target's current health, so an older report (a retry, an overlapping
-- batch on another replica) never replaces a newer one. Nullable, no default: adding it rewrites no row.
ALTER TABLE "Target" ADD COLUMN "healthObservedAt" TIMESTAMP(3);
