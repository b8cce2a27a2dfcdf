import { isPlainObject } from './json-pointer.js';

/**
 * The part of a live object worth keeping between comparisons: all that drift and health read,
 * without the managedFields entries of the `status` subresource. Drift reads managedFields only to
 * learn who owns the fields it compares, and it never compares status; health reads status itself,
 * not who wrote it. Those entries are rewritten by a controller at each status change and are, for a
 * Deployment, about as large as the rest of its metadata — in a watch cache of every object an agent
 * manages, they are memory spent on nothing. Returns the object itself when there is nothing to drop.
 */
export function liveForDrift<T>(live: T): T {
  if (!isPlainObject(live)) return live;
  const metadata = live['metadata'];
  if (!isPlainObject(metadata)) return live;
  const entries = metadata['managedFields'];
  if (!Array.isArray(entries)) return live;
  const kept = entries.filter((e) => !(isPlainObject(e) && e['subresource'] === 'status'));
  if (kept.length === entries.length) return live;
  return { ...live, metadata: { ...metadata, managedFields: kept } };
}
