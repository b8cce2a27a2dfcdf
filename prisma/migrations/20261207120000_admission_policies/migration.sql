-- Admission policies from fleet repositories gate releases (#25): the objects, and a target's denial.
ALTER TABLE "Target" ADD COLUMN "policyDenial" JSONB;

CREATE TABLE "AdmissionPolicyObject" (
    "id" TEXT NOT NULL,
    "apiVersion" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "namespace" TEXT NOT NULL DEFAULT '',
    "name" TEXT NOT NULL,
    "document" JSONB NOT NULL,
    "managedBy" TEXT NOT NULL DEFAULT 'git',
    "fleetSourceId" TEXT NOT NULL,
    "sourceCommit" TEXT NOT NULL,
    "sourceFile" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "AdmissionPolicyObject_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "AdmissionPolicyObject_apiVersion_kind_namespace_name_key" ON "AdmissionPolicyObject"("apiVersion", "kind", "namespace", "name");
CREATE INDEX "AdmissionPolicyObject_fleetSourceId_idx" ON "AdmissionPolicyObject"("fleetSourceId");
