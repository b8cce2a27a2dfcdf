-- A chart from a Helm repository has no Git repository: its render records name the Helm repository's URL.
ALTER TABLE "RenderRecord" ALTER COLUMN "repositoryId" DROP NOT NULL;
ALTER TABLE "RenderRecord" ADD COLUMN "repoUrl" TEXT;
