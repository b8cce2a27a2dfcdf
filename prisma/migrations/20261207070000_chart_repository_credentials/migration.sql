-- Credentials for Helm repositories and OCI registries (sealed; matched by URL prefix).
CREATE TABLE "ChartRepositoryCredential" (
    "id" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "username" TEXT NOT NULL,
    "secretCiphertext" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ChartRepositoryCredential_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "ChartRepositoryCredential_url_key" ON "ChartRepositoryCredential"("url");
