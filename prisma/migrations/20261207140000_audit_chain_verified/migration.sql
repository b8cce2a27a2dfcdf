-- Incremental audit verification: each lane's verified position, and the last full pass. Both tables
-- are new and start empty (the first verification after upgrade walks every lane once).
CREATE TABLE "AuditChainVerified" (
    "lane" SMALLINT NOT NULL,
    "throughId" BIGINT NOT NULL,
    "hash" TEXT NOT NULL,
    "verifiedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "AuditChainVerified_pkey" PRIMARY KEY ("lane")
);

CREATE TABLE "AuditFullPass" (
    "id" INTEGER NOT NULL,
    "finishedAt" TIMESTAMP(3) NOT NULL,
    "valid" BOOLEAN NOT NULL,
    "checked" INTEGER NOT NULL,
    "firstBrokenAt" JSONB,

    CONSTRAINT "AuditFullPass_pkey" PRIMARY KEY ("id")
);
