import type { Prisma } from '../generated/prisma/client.js';

/** Plain data (already validated) as a Prisma JSON column value. */
export function toJson(value: unknown): Prisma.InputJsonValue {
  return JSON.parse(JSON.stringify(value ?? null)) as Prisma.InputJsonValue;
}

export function asRecord(value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  return Object.fromEntries(Object.entries(value).filter(([, v]) => typeof v === 'string'));
}

/** The message of an error stored as JSON (`{message}` as HubError serialises it), or the JSON itself. */
export function storedErrorText(error: unknown): string {
  if (error && typeof error === 'object' && 'message' in error && typeof error.message === 'string')
    return error.message;
  return JSON.stringify(error);
}
