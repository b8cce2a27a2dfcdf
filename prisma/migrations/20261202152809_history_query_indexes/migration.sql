-- DropIndex
DROP INDEX "AuditEvent_action_at_idx";

-- CreateIndex
CREATE INDEX "AuditEvent_action_at_idx" ON "AuditEvent"("action" text_pattern_ops, "at");

-- CreateIndex
CREATE INDEX "AuditEvent_actor_id_idx" ON "AuditEvent"("actor", "id");

-- CreateIndex
CREATE INDEX "SyncRun_startedAt_id_idx" ON "SyncRun"("startedAt" DESC, "id" DESC);


