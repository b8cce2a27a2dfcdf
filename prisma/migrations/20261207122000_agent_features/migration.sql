-- What each cluster's agent announces it can do (dry-run, terminate, per-run options); an agent that
-- announces nothing is asked for none of them.
ALTER TABLE "Cluster" ADD COLUMN "agentFeatures" TEXT[] DEFAULT ARRAY[]::TEXT[];
