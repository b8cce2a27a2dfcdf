-- The deletion guard's baseline (targets), moved only up by growth and down by a confirmation.
-- Nullable with no default: adding the columns rewrites no row (null = judge against the current count).
ALTER TABLE "ApplicationSet" ADD COLUMN "guardBaseline" INTEGER;
ALTER TABLE "FleetSource" ADD COLUMN "guardBaseline" INTEGER;
