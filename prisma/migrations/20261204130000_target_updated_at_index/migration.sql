-- The console's live view (GET /api/v1/events) reads the targets changed since its last look.
CREATE INDEX "Target_updatedAt_idx" ON "Target"("updatedAt");
