-- AlterTable
ALTER TABLE "FleetSource" ADD COLUMN     "pendingDeletion" JSONB;

-- CreateTable
CREATE TABLE "FleetManaged" (
    "kind" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "fleetSourceId" TEXT NOT NULL,
    "file" TEXT NOT NULL,
    "document" INTEGER NOT NULL,
    "commit" TEXT NOT NULL,
    "author" TEXT NOT NULL,
    "object" JSONB NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "FleetManaged_pkey" PRIMARY KEY ("kind","name")
);

-- CreateIndex
CREATE INDEX "FleetManaged_fleetSourceId_idx" ON "FleetManaged"("fleetSourceId");


