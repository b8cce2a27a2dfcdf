-- AlterTable
ALTER TABLE "ApplicationSet" ADD COLUMN     "pendingExpansion" JSONB;


