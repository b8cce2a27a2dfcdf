-- CreateTable
CREATE TABLE "ChartRepositoryVerification" (
    "url" TEXT NOT NULL,
    "verify" TEXT NOT NULL,
    "gpgKeys" TEXT NOT NULL,
    "fingerprints" TEXT[],
    "digest" TEXT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ChartRepositoryVerification_pkey" PRIMARY KEY ("url")
);

-- CreateTable
CREATE TABLE "ChartRepositoryVerificationChange" (
    "id" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "actor" TEXT NOT NULL,
    "verify" TEXT NOT NULL,
    "gpgKeys" TEXT NOT NULL,
    "fingerprints" TEXT[],
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ChartRepositoryVerificationChange_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ChartVerification" (
    "repoUrl" TEXT NOT NULL,
    "chart" TEXT NOT NULL,
    "version" TEXT NOT NULL,
    "packageDigest" TEXT NOT NULL,
    "digest" TEXT NOT NULL,
    "verify" TEXT NOT NULL,
    "verified" BOOLEAN,
    "signer" TEXT NOT NULL,
    "message" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ChartVerification_pkey" PRIMARY KEY ("repoUrl","chart","version","packageDigest","digest")
);

-- CreateIndex
CREATE INDEX "ChartRepositoryVerificationChange_url_createdAt_idx" ON "ChartRepositoryVerificationChange"("url", "createdAt");

-- CreateIndex
CREATE INDEX "ChartVerification_createdAt_idx" ON "ChartVerification"("createdAt");
