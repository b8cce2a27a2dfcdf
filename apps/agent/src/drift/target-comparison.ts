import { randomUUID } from 'node:crypto';
import {
  type Assignment,
  COMPARISON_LIMITS,
  type ComparisonReport,
  groupOf,
  type KubeObject,
  type ObjectComparison,
  type ObjectRef,
  refKey,
} from '@flotilla/contract';
import { diffLabel, renderUnifiedDiff, syncedObject, type UnifiedDiff } from '@flotilla/diff';
import { type DriftDifference } from './drift-differ.js';

/** Diff lines shown of one object when the total would pass its limit (a headline and the first hunk). */
const SHARE_WHEN_CROWDED = 2 * 1024;

/**
 * The target's latest comparison of every declared object with the cluster, kept across drift
 * checks (a watch event compares only the objects it names), and turned into a `comparison` report
 * only once every declared object has been compared and only when what it says changed — so a
 * manual target shows OutOfSync and its diff before anyone syncs, at no cost while nothing moves.
 */
export class TargetComparison {
  /** Per declared object: what is out of sync (null: in sync). Absent: not compared yet. */
  private readonly entries = new Map<string, ObjectComparison | null>();
  private keys: string[] = [];
  private digest: string | undefined;
  private concealed: readonly ObjectRef[] = [];
  /** Something recorded since the last report differs from what was there: worth comparing whole. */
  private dirty = true;
  /** Objects a prune would delete (the target applied them, Git no longer declares them). */
  private leftovers: ObjectComparison[] = [];
  /** The revision of the last report made. */
  private revision: string | undefined;
  private sent: string | undefined;

  /**
   * The objects a bundle declares; a new bundle starts the comparison afresh. `concealed`: objects
   * SOPS-encrypted in Git, whose diffs name the fields that differ and never their values.
   */
  declared(keys: Iterable<string>, bundleDigest: string, concealed: readonly ObjectRef[] = []): void {
    this.keys = [...keys];
    this.concealed = concealed;
    this.dirty = true;
    if (bundleDigest !== this.digest) this.entries.clear();
    this.digest = bundleDigest;
    const wanted = new Set(this.keys);
    for (const key of this.entries.keys()) if (!wanted.has(key)) this.entries.delete(key);
  }

  /** One object's comparison: `live` undefined when the cluster does not have it. */
  record(
    key: string,
    desired: KubeObject,
    live: KubeObject | undefined,
    differences: DriftDifference[],
  ): void {
    if (live && differences.length === 0) {
      if (this.entries.get(key) !== null) this.dirty = true;
      this.entries.set(key, null);
      return;
    }
    const ref = {
      group: groupOf(desired.apiVersion),
      kind: desired.kind,
      name: desired.metadata.name,
      ...(desired.metadata.namespace ? { namespace: desired.metadata.namespace } : {}),
    };
    const label = diffLabel({ apiVersion: desired.apiVersion, ...ref });
    const paths = live ? [...new Set(differences.map((d) => d.path))].sort().slice(0, 200) : [''];
    const diff = this.isConcealed(ref)
      ? concealedDiff(label, live ? paths : ['(the whole object: it does not exist yet)'])
      : live
        ? renderUnifiedDiff({ live, desired: syncedObject(live, differences), label })
        : renderUnifiedDiff({ live: null, desired, label });
    const entry: ObjectComparison = {
      ...ref,
      apiVersion: desired.apiVersion,
      action: live ? 'change' : 'create',
      paths,
      diff: diff.text,
      truncated: diff.truncated,
    };
    const before = this.entries.get(key);
    if (!before || before.diff !== entry.diff || before.paths.join('\n') !== paths.join('\n'))
      this.dirty = true;
    this.entries.set(key, entry);
  }

  /**
   * The objects the target still owns that Git no longer declares, each with whether a sync would
   * prune it: shown as deletions, the whole object going, as `kubectl diff` shows a removed one.
   * Replaced whole at each look. They do not make the target OutOfSync by themselves: `inSync`
   * speaks of what Git declares, as before.
   */
  leftoversFound(found: readonly { live: KubeObject; prune: boolean }[]): void {
    const entries = found.map(({ live, prune }) => {
      const ref = {
        group: groupOf(live.apiVersion),
        kind: live.kind,
        name: live.metadata.name,
        ...(live.metadata.namespace ? { namespace: live.metadata.namespace } : {}),
      };
      const diff = renderUnifiedDiff({
        live,
        desired: null,
        label: diffLabel({ apiVersion: live.apiVersion, ...ref }),
      });
      const entry: ObjectComparison = {
        ...ref,
        apiVersion: live.apiVersion,
        action: 'delete',
        prune,
        paths: [''],
        diff: diff.text,
        truncated: diff.truncated,
      };
      return entry;
    });
    if (JSON.stringify(entries) !== JSON.stringify(this.leftovers)) this.dirty = true;
    this.leftovers = entries;
  }

  /** A manifest without a namespace is matched by its name: the agent gives it the target's. */
  private isConcealed(ref: ObjectRef): boolean {
    return this.concealed.some(
      (c) =>
        c.group === ref.group &&
        c.kind === ref.kind &&
        c.name === ref.name &&
        (c.namespace === undefined || c.namespace === ref.namespace),
    );
  }

  /** A report when every declared object is compared and the result differs from the last one sent. */
  report(assignment: Assignment, at: Date): ComparisonReport | null {
    if (this.digest !== assignment.bundleDigest) return null;
    // A watch event that changed nothing shown (a status update) costs no whole comparison; a new
    // commit that renders the same bundle is still told, as of its revision.
    if (!this.dirty && assignment.revision === this.revision) return null;
    if (this.keys.some((k) => !this.entries.has(k))) return null;
    this.dirty = false;
    this.revision = assignment.revision;
    const outOfSync = [...this.entries.values()].filter((e): e is ObjectComparison => e !== null);
    const listed = [...outOfSync, ...this.leftovers].sort((a, b) =>
      refKey(a) < refKey(b) ? -1 : refKey(a) > refKey(b) ? 1 : 0,
    );
    const { objects, truncated } = withinLimits(listed);
    const content = {
      revision: assignment.revision,
      bundleDigest: assignment.bundleDigest,
      inSync: outOfSync.length === 0,
      compared: this.keys.length,
      objects,
      truncated,
    };
    const signature = JSON.stringify(content);
    if (signature === this.sent) return null;
    this.sent = signature;
    return {
      type: 'comparison',
      id: randomUUID(),
      targetId: assignment.targetId,
      at: at.toISOString(),
      ...content,
    };
  }
}

/** The headline of a diff, and which fields differ: no value of an object Git holds encrypted. */
function concealedDiff(label: string, paths: string[]): UnifiedDiff {
  const lines = [
    `diff -u -N live/${label} desired/${label}`,
    '# SOPS-encrypted in Git: its values stay in the cluster. Fields a sync would change:',
    ...paths.map((p) => `#   ${p}`),
  ];
  const text = `${lines.join('\n')}\n`;
  return new TextEncoder().encode(text).length <= COMPARISON_LIMITS.diffBytes
    ? { text, truncated: false }
    : { text: shorten(text, COMPARISON_LIMITS.diffBytes), truncated: true };
}

/**
 * The contract's bounds: at most so many objects, and diffs that fit in the total — when they do
 * not, each keeps its first SHARE_WHEN_CROWDED bytes of lines, and those past the total keep only
 * their paths. Whatever is cut is marked, never dropped silently.
 */
function withinLimits(all: ObjectComparison[]): { objects: ObjectComparison[]; truncated: boolean } {
  let truncated = all.length > COMPARISON_LIMITS.objects;
  const listed = all.slice(0, COMPARISON_LIMITS.objects);
  const size = (o: ObjectComparison): number => new TextEncoder().encode(o.diff).length;
  if (listed.reduce((n, o) => n + size(o), 0) <= COMPARISON_LIMITS.totalDiffBytes)
    return { objects: listed, truncated };
  truncated = true;
  let used = 0;
  const objects = listed.map((o) => {
    const short = size(o) > SHARE_WHEN_CROWDED ? shorten(o.diff, SHARE_WHEN_CROWDED) : o.diff;
    const bytes = new TextEncoder().encode(short).length;
    if (used + bytes > COMPARISON_LIMITS.totalDiffBytes) return { ...o, diff: '', truncated: true };
    used += bytes;
    return short === o.diff ? o : { ...o, diff: short, truncated: true };
  });
  return { objects, truncated };
}

/** Whole lines within `max` bytes, and a line saying the rest is left out. */
function shorten(diff: string, max: number): string {
  const note = '... diff shortened: the comparison as a whole passed its size limit';
  const encoder = new TextEncoder();
  let used = encoder.encode(note).length + 1;
  const kept: string[] = [];
  for (const line of diff.split('\n')) {
    const n = encoder.encode(line).length + 1;
    if (used + n > max) break;
    used += n;
    kept.push(line);
  }
  return `${[...kept, note].join('\n')}\n`;
}
