import type { Request, Response } from 'express';
import express from 'express';
import { HubError } from './hub-error.js';

/**
 * The deepest JSON a body may nest (objects and arrays). Real documents (appsets, manifests in a
 * template) stay far below; 100,000 levels made validation overflow the stack (a 500). Checked on
 * the raw bytes before JSON.parse, so nothing deep is ever built.
 */
export const MAX_JSON_DEPTH = 128;

/** A refusal thrown from body-parser's `verify` hook, carried out with its status. */
class TooDeep extends Error {
  readonly status = 400;
  readonly type = 'flotilla.too-deep';
}

/**
 * How deep `bytes` (JSON text) nests, counting only brackets outside strings; stops at `limit` + 1.
 * One pass over the bytes, no allocation.
 */
export function jsonDepthExceeds(bytes: Uint8Array, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped byte
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/**
 * Reads and parses a JSON body with an explicit cap and a nesting bound. Called after the route's
 * guards (see BodyParserInterceptor), so an unauthenticated caller's body is never read: 413
 * `payload-too-large` naming the limit (not read past it), 400 for JSON too deep or unreadable.
 * A body another parser consumed (webhooks keep theirs raw) is left alone.
 */
export function readJsonBody(req: Request, res: Response, limitBytes: number, what: string): Promise<void> {
  const parse = express.json({
    limit: limitBytes,
    verify: (_req, _res, buf) => {
      if (jsonDepthExceeds(buf, MAX_JSON_DEPTH)) throw new TooDeep();
    },
  });
  return new Promise((resolve, reject) => {
    parse(req, res, (err?: unknown) => {
      if (err === undefined || err === null) {
        resolve();
        return;
      }
      const status =
        typeof err === 'object' && 'status' in err && typeof err.status === 'number' ? err.status : 400;
      if (err instanceof TooDeep) {
        reject(
          new HubError(
            400,
            'invalid-request',
            `${what} nests deeper than ${MAX_JSON_DEPTH} levels of objects and arrays`,
          ),
        );
      } else if (status === 413) {
        reject(
          new HubError(
            413,
            'payload-too-large',
            `${what} is limited to ${limitBytes} bytes; this one is larger`,
          ),
        );
      } else {
        reject(
          new HubError(
            400,
            'invalid-request',
            `unreadable JSON body: ${err instanceof Error ? err.message : 'unknown error'}`,
          ),
        );
      }
    });
  });
}
