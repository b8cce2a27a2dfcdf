// What an expansion would change: the stored targets compared with the computed ones, with no I/O.
import { createHash } from 'node:crypto';
import type { TargetSourceView } from '@flotilla/contract';
import { canonicalJson } from '@flotilla/manifests';
import type { Target } from '../generated/prisma/client.js';
import type { GuardInput } from './deletion-guard.js';

export interface DesiredTarget {
  name: string;
  clusterId: string;
  clusterName: string;
  namespace: string;
  repoUrl: string;
  sourcePath: string;
  targetRevision: string;
  desiredRevision: string;
  /** A multi-source target's sources with what each resolved to; null for one source. */
  sources: TargetSourceView[] | null;
  bundleDigest: string;
  syncPolicy: unknown;
  params: unknown;
}

/** What an expansion would do to the stored targets. */
export interface ExpansionPlan {
  create: DesiredTarget[];
  update: { current: Target; desired: DesiredTarget }[];
  /**
   * Same name, another cluster: the old row goes and a new one (new id, no status) takes its place.
   * A target's identity includes its cluster, so nothing another cluster reported — health, last
   * sync, release, pin — is shown for one that never synced it.
   */
  move: { current: Target; desired: DesiredTarget }[];
  delete: Target[];
}

/**
 * Creates, updates (only when something differs), moves (same name, another cluster) and deletes
 * that turn `existing` into `desired`.
 */
export function planExpansion(existing: Target[], desired: DesiredTarget[]): ExpansionPlan {
  const byName = new Map(existing.map((t) => [t.name, t]));
  const plan: ExpansionPlan = { create: [], update: [], move: [], delete: [] };
  for (const d of desired) {
    const cur = byName.get(d.name);
    if (!cur) plan.create.push(d);
    else if (cur.clusterId !== d.clusterId) plan.move.push({ current: cur, desired: d });
    else if (!sameTarget(cur, d)) plan.update.push({ current: cur, desired: d });
  }
  const keep = new Set(desired.map((d) => d.name));
  plan.delete = existing.filter((t) => !keep.has(t.name));
  return plan;
}

function sameTarget(cur: Target, d: DesiredTarget): boolean {
  return (
    cur.namespace === d.namespace &&
    cur.repoUrl === d.repoUrl &&
    cur.sourcePath === d.sourcePath &&
    cur.targetRevision === d.targetRevision &&
    cur.desiredRevision === d.desiredRevision &&
    canonicalJson(cur.sources ?? null) === canonicalJson(d.sources) &&
    cur.bundleDigest === d.bundleDigest &&
    canonicalJson(cur.syncPolicy) === canonicalJson(d.syncPolicy) &&
    canonicalJson(cur.params) === canonicalJson(d.params)
  );
}

/** Identifies a computed target set: same hash, same creates/updates/deletes against the same database. */
export function targetSetHash(desired: DesiredTarget[]): string {
  const sorted = [...desired].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return createHash('sha256').update(canonicalJson(sorted)).digest('hex').slice(0, 24);
}

/** What the deletion guard judges for a plan; a move deletes nothing (the target goes on, elsewhere). */
export function guardInput(
  current: number,
  plan: ExpansionPlan,
  after: number,
  baseline: number | null,
): GuardInput {
  return { current, deleting: plan.delete.length, after, baseline };
}
