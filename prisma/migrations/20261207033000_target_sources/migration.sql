-- A multi-source target records each source and the revision it resolved to; null for one source.
ALTER TABLE "Target" ADD COLUMN "sources" JSONB;
