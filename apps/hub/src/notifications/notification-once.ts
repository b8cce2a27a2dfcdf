import type { Prisma } from '../generated/prisma/client.js';

/**
 * Claims a key that may be met only once (`policy:<name>/deployed/<target>/<revision>`,
 * `event:cluster-offline/<cluster>/<last seen>`); false when it was claimed before. Inside the
 * caller's transaction, so a rolled-back caller leaves the key unclaimed.
 */
export async function claimOnce(tx: Prisma.TransactionClient, key: string): Promise<boolean> {
  const inserted = await tx.$executeRaw`
    INSERT INTO "NotificationOnce" ("key", "createdAt") VALUES (${key}, CURRENT_TIMESTAMP)
    ON CONFLICT ("key") DO NOTHING`;
  return inserted > 0;
}
