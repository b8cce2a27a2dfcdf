import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';

/**
 * The console's Content-Security-Policy: its own scripts and styles only, API calls to its own
 * origin, no frames, no plugins. Every name from Git or a cluster is rendered as text by React, and
 * this policy is the second line: an injected `<script>` or inline handler would not run anyway.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Paths the console never answers: the API, probes and metrics keep their own 404s. */
const NOT_CONSOLE = /^\/(api|healthz|readyz|metrics)(\/|$)/;

function securityHeaders(res: Response): void {
  res.setHeader('Content-Security-Policy', CONSOLE_CSP);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
}

/**
 * Serves the built console at `/` on the API's own origin (the console calls only the public API,
 * with the person's token). Hashed assets are immutable; index.html is never cached, so a new hub
 * version is picked up on the next navigation. Any other GET is a console route (the browser's
 * history API) and gets index.html.
 */
export function serveConsole(app: NestExpressApplication, dir: string | null): void {
  const index = dir ? join(dir, 'index.html') : null;
  if (!dir || !index || !existsSync(index)) {
    const why = dir
      ? `the web console is not built (no ${index}): run npm run build`
      : 'the web console is off on this hub (FLOTILLA_CONSOLE_DIR=off)';
    app.use((req: Request, res: Response, next: NextFunction) => {
      if (!isConsoleRequest(req)) return next();
      res.status(503).type('text/plain').send(`${why}\n`);
    });
    return;
  }
  const html = readFileSync(index);
  app.useStaticAssets(join(dir, 'assets'), {
    prefix: '/assets',
    immutable: true,
    maxAge: '365d',
    index: false,
    fallthrough: false,
    setHeaders: (res: Response) => securityHeaders(res),
  });
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (!isConsoleRequest(req)) return next();
    securityHeaders(res);
    res.setHeader('Cache-Control', 'no-cache');
    res.status(200).type('html').send(html);
  });
}

function isConsoleRequest(req: Request): boolean {
  return (req.method === 'GET' || req.method === 'HEAD') && !NOT_CONSOLE.test(req.path);
}
