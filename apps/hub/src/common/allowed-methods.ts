import type { Request } from 'express';

/** The parts of Express's router (express 5, router 2) read here: its layers and their routes. */
interface RouterLayer {
  route?: { methods: Record<string, boolean> };
  match(path: string): boolean;
}

/**
 * The HTTP methods some route of the app answers on this request's path, upper-case and sorted
 * (HEAD wherever GET is). Asked with Express's own matcher, so the answer agrees with the routing
 * that just failed to find the request's method. Empty when no route has the path at all.
 */
export function allowedMethods(req: Request): string[] {
  const router = (req.app as unknown as { router?: { stack?: RouterLayer[] } }).router;
  const methods = new Set<string>();
  for (const layer of router?.stack ?? []) {
    if (!layer.route || !layer.match(req.path)) continue;
    for (const [m, on] of Object.entries(layer.route.methods))
      if (on && m !== '_all') methods.add(m.toUpperCase());
  }
  if (methods.has('GET')) methods.add('HEAD');
  return [...methods].sort();
}
