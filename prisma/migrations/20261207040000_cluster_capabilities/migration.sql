-- What each agent reports of its cluster's discovery; its charts render with it as .Capabilities.
ALTER TABLE "Cluster" ADD COLUMN     "apiVersions" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "capabilitiesAt" TIMESTAMP(3),
ADD COLUMN     "kubeVersion" TEXT;
