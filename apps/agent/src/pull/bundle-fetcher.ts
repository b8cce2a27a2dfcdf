import { type AssignmentsResponse, type Bundle } from '@flotilla/contract';
import { bundleDigest } from '@flotilla/manifests';
import { type HubClient } from '../hub/hub-client.js';
import { type StateStore } from '../state/state-store.js';

/** The bundles of an assignments answer: those that verified, and why each other one is missing. */
export interface FetchedBundles {
  bundles: Map<string, Bundle>;
  /** One line per bundle the hub did not send or that does not hash to its digest. */
  failures: string[];
}

/**
 * Gets the bundles an assignments answer names: from the state dir when it has them, the rest from
 * the hub in one batch. Each fetched bundle is verified (its content must hash to its digest) before
 * it is stored or used; one that does not is refused.
 */
export class BundleFetcher {
  constructor(
    private readonly store: StateStore,
    private readonly hub: HubClient,
    private readonly signal: AbortSignal,
  ) {}

  async fetch(cred: string, response: AssignmentsResponse): Promise<FetchedBundles> {
    const bundles = new Map<string, Bundle>();
    const failures: string[] = [];
    const digests = [
      ...new Set([...response.assignments, ...(response.deletions ?? [])].map((a) => a.bundleDigest)),
    ];
    const missing: string[] = [];
    // The state dir is read (and below written) for all the bundles at once: one after the other,
    // a commit's ten bundles waited for ten fsyncs in a row before the first target could sync.
    const stored = await Promise.all(digests.map((digest) => this.store.loadBundle(digest)));
    for (const [i, digest] of digests.entries()) {
      const found = stored[i];
      if (found) bundles.set(digest, found);
      else missing.push(digest);
    }
    if (missing.length === 0) return { bundles, failures };
    // A commit usually changes every bundle at once: all of them in one request (chunked by the hub's
    // cap), not one round trip each.
    const fetched = await this.hub.bundles(cred, missing, this.signal);
    const wanted = new Set(missing);
    const verified: Bundle[] = [];
    for (const bundle of fetched.bundles) {
      if (!wanted.delete(bundle.digest)) continue; // not asked for (or twice): ignored
      const actual = bundleDigest(bundle.manifests);
      if (actual !== bundle.digest) {
        failures.push(`bundle ${bundle.digest}: content hashes to ${actual}; refused`);
        continue;
      }
      verified.push(bundle);
    }
    // Every bundle is on disk before fetch returns, so before the assignments naming it are saved.
    await Promise.all(verified.map((bundle) => this.store.saveBundle(bundle)));
    for (const bundle of verified) bundles.set(bundle.digest, bundle);
    for (const digest of wanted) {
      failures.push(`bundle ${digest}: the hub did not send it (no longer assigned to this cluster?)`);
    }
    return { bundles, failures };
  }
}

/**
 * What runs after a partial failure, as it is saved: the new assignment where its bundle verified,
 * the previous one elsewhere, under the previous ETag (so the next poll fetches the whole set
 * again). A restart while the hub is away resumes there, never at an older revision.
 */
export function assignmentsThatRun(
  response: AssignmentsResponse,
  previous: AssignmentsResponse | undefined,
  bundles: ReadonlyMap<string, Bundle>,
): AssignmentsResponse {
  const before = new Map(previous?.assignments.map((a) => [a.targetId, a]));
  return {
    ...response,
    etag: previous?.etag ?? '',
    assignments: response.assignments.flatMap((a) => {
      if (bundles.has(a.bundleDigest)) return [a];
      const old = before.get(a.targetId);
      return old ? [old] : [];
    }),
  };
}
