import { type ServerResponse } from 'node:http';
import { StatusError } from '../errors.js';
import { type JsonObject, str } from '../json.js';
import { apiVersionOf, resourceKey, type ResourceType } from '../resources/resource-type.js';
import { type ObjectStore, type StoreEvent } from '../store/object-store.js';
import { type Matcher } from '../store/selectors.js';

export interface WatchRequest {
  rt: ResourceType;
  namespace?: string;
  resourceVersion?: string;
  timeoutSeconds?: number;
  allowBookmarks: boolean;
  sendInitialEvents: boolean;
  labels: Matcher;
  fields: Matcher;
  /** A selector was given: an object that starts matching arrives as ADDED, one that stops as DELETED. */
  filtered: boolean;
}

/** How often a bookmark goes out on watches that asked for them. */
const BOOKMARK_INTERVAL_MS = 60_000;

/**
 * Streams one watch (§5): synthetic ADDED or replay from a resourceVersion, live events with
 * selector transitions, bookmarks, timeout, and cleanup when the client goes away (`res` close,
 * not `req` close, which fires once the request body is read).
 */
export class WatchStream {
  private unsubscribe: (() => void) | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private closed = false;
  private readonly matching = new Set<string>();

  constructor(
    private readonly store: ObjectStore,
    private readonly w: WatchRequest,
    private readonly res: ServerResponse,
    private readonly onEnd: (s: WatchStream) => void,
  ) {}

  start(): void {
    const { res, w } = this;
    res.writeHead(200, {
      'Content-Type': 'application/json',
      'Transfer-Encoding': 'chunked',
      'Cache-Control': 'no-cache',
    });
    res.socket?.setNoDelay(true);
    res.flushHeaders();
    res.on('close', () => this.close());
    const key = resourceKey(w.rt);
    const rv = w.resourceVersion;
    try {
      if (rv === undefined || rv === '' || rv === '0') {
        const from = this.store.resourceVersion;
        for (const o of this.store.list(key, w.rt.namespaced ? w.namespace : undefined)) {
          if (!this.matches(o)) continue;
          this.matching.add(this.keyOf(o));
          this.send('ADDED', o);
        }
        if (w.sendInitialEvents && w.allowBookmarks) this.bookmark({ 'k8s.io/initial-events-end': 'true' });
        this.unsubscribe = this.store.watch(key, from, (e) => this.onEvent(e));
      } else {
        const n = Number(rv);
        if (!Number.isInteger(n) || n < 0)
          throw new StatusError(400, 'BadRequest', `invalid resource version: ${rv}`);
        this.unsubscribe = this.store.watch(key, n, (e) => this.onEvent(e));
      }
    } catch (err) {
      if (err instanceof StatusError) {
        this.write({ type: 'ERROR', object: err.toStatus() });
        this.close();
        return;
      }
      throw err;
    }
    if (w.timeoutSeconds !== undefined && w.timeoutSeconds > 0)
      this.timers.push(
        setTimeout(() => {
          if (w.allowBookmarks) this.bookmark();
          this.close();
        }, w.timeoutSeconds * 1000),
      );
    if (w.allowBookmarks) this.timers.push(setInterval(() => this.bookmark(), BOOKMARK_INTERVAL_MS));
  }

  private keyOf(o: JsonObject): string {
    const m = (o['metadata'] ?? {}) as JsonObject;
    return `${str(m['namespace'] ?? '')}/${str(m['name'] ?? '')}`;
  }

  private matches(o: JsonObject): boolean {
    return this.w.labels(o) && this.w.fields(o);
  }

  private onEvent(e: StoreEvent): void {
    if (this.closed) return;
    if (this.w.rt.namespaced && this.w.namespace !== undefined && e.namespace !== this.w.namespace) return;
    const k = `${e.namespace}/${e.name}`;
    const now = this.matches(e.object);
    // A watch resumed from a resourceVersion has not seen the objects that matched then: the
    // replaced snapshot says whether this one did.
    const before = e.previous ? this.matches(e.previous) : this.matching.has(k);
    if (e.type === 'DELETED') {
      this.matching.delete(k);
      if (now || before) this.send('DELETED', e.object);
      return;
    }
    if (now) {
      this.matching.add(k);
      this.send(e.type === 'ADDED' || (!before && this.w.filtered) ? 'ADDED' : e.type, e.object);
    } else if (before) {
      this.matching.delete(k);
      this.send('DELETED', e.object);
    }
  }

  private send(type: string, object: JsonObject): void {
    this.write({ type, object });
  }

  private bookmark(annotations?: Record<string, string>): void {
    const metadata: JsonObject = { resourceVersion: str(this.store.resourceVersion) };
    if (annotations) metadata['annotations'] = annotations;
    this.write({
      type: 'BOOKMARK',
      object: { kind: this.w.rt.kind, apiVersion: apiVersionOf(this.w.rt), metadata },
    });
  }

  private write(event: unknown): void {
    if (this.closed || this.res.writableEnded) return;
    this.res.write(`${JSON.stringify(event)}\n`);
  }

  /** Ends the stream from the server side (timeout, shutdown, or a test forcing a reconnect). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe?.();
    for (const t of this.timers) clearTimeout(t);
    if (!this.res.writableEnded) this.res.end();
    this.onEnd(this);
  }
}
