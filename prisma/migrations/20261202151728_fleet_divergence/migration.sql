-- AlterTable
ALTER TABLE "FleetManaged" ADD COLUMN     "divergedAt" TIMESTAMP(3),
ADD COLUMN     "divergedBy" TEXT,
ADD COLUMN     "divergedUnder" INTEGER;
