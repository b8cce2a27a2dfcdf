-- A person may ask to stop a requested sync while its agent runs it (POST /api/v1/operations/:id/terminate).
ALTER TABLE "TargetOperation" ADD COLUMN "terminateRequestedBy" TEXT,
ADD COLUMN "terminateReason" TEXT,
ADD COLUMN "terminateRequestedAt" TIMESTAMP(3);
