import { chmod, mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import {
  type AssignmentsResponse,
  type Bundle,
  assignmentsResponseSchema,
  bundleSchema,
} from '@flotilla/contract';
import { bundleDigest } from '@flotilla/manifests';
import { readJsonFile, writeFileAtomic } from './atomic-file.js';

export const storedCredentialSchema = z.object({
  clusterName: z.string(),
  clusterId: z.string(),
  credential: z.string().min(1),
  expiresAt: z.string().nullable(),
  /** When the hub issued it; the agent rotates when a third of its lifetime is left. */
  issuedAt: z.string().optional(),
});
export type StoredCredential = z.infer<typeof storedCredentialSchema>;

/** Enough to find an object again without its manifest: what prune needs. */
export const resourceIdSchema = z.object({
  apiVersion: z.string(),
  kind: z.string(),
  namespace: z.string().optional(),
  name: z.string(),
});
export type ResourceId = z.infer<typeof resourceIdSchema>;

/** What the agent must remember about a target across restarts. */
export const targetStateSchema = z.object({
  /** Objects this target applied and has not pruned yet, in apply order. */
  inventory: z.array(resourceIdSchema).default([]),
  /**
   * The last digest a sync was attempted for, and how it ended; `attempts` counts the failed syncs of
   * this digest and revision in a row (kept across restarts, so a restart never resets the retry limit).
   */
  lastSync: z
    .object({
      digest: z.string(),
      revision: z.string().default(''),
      outcome: z.string(),
      at: z.string(),
      attempts: z.number().int().min(0).default(0),
    })
    .nullable()
    .default(null),
  /** A sync or heal that a window blocked, to run when the window opens. */
  pendingIntent: z.enum(['auto', 'self-heal']).nullable().default(null),
  /** Objects where self-heal gave up because another manager keeps writing: key → manager. */
  contested: z.record(z.string(), z.string()).default({}),
  /**
   * Operations (syncs people asked for) this agent started, newest last, the last 200: saved before
   * the run, so a replayed assignment, a restart or another hub replica's answer never runs one twice.
   */
  startedOperations: z.array(z.string()).default([]),
  /**
   * The user the last sync wrote as (its project's ServiceAccount, FLOTILLA_IMPERSONATE_NAMESPACE);
   * the target's deletion, which carries no project, deletes as the same. Absent: as the agent.
   */
  writesAs: z.string().optional(),
});
export type TargetState = z.infer<typeof targetStateSchema>;

/**
 * How far the deletion of a target got (one tombstone), saved after each phase: a restart never runs
 * PreDelete hooks that already succeeded (nor PostDelete ones) again. Forgotten once the tombstone
 * leaves the assignments.
 */
export const deletionProgressSchema = z.object({
  deletionId: z.string(),
  preDeleteDone: z.boolean().default(false),
  postDeleteDone: z.boolean().default(false),
  /** Reported (succeeded or failed): never run again under this id, even while the hub still sends it. */
  finished: z.boolean().default(false),
});
export type DeletionProgress = z.infer<typeof deletionProgressSchema>;

export class StateCorruptError extends Error {
  readonly code = 'agent-state-corrupt';
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(`ignoring ${path}: ${reason}; it will be fetched or rebuilt again`);
    this.name = 'StateCorruptError';
  }
}

/**
 * The agent's local disk: credential, last assignments, bundles by digest and per-target memory.
 * Everything is written atomically; anything unreadable is reported and treated as absent, so a
 * damaged file costs a re-fetch, never a wrong apply.
 */
export class StateStore {
  readonly corrupt: StateCorruptError[] = [];

  constructor(readonly dir: string) {}

  async init(): Promise<void> {
    for (const sub of ['', 'bundles', 'targets', 'reports', 'deletions']) {
      await mkdir(join(this.dir, sub), { recursive: true, mode: 0o700 });
    }
  }

  get reportsDir(): string {
    return join(this.dir, 'reports');
  }

  async loadCredential(): Promise<StoredCredential | undefined> {
    return this.load(join(this.dir, 'credential.json'), storedCredentialSchema);
  }

  async saveCredential(credential: StoredCredential): Promise<void> {
    const path = join(this.dir, 'credential.json');
    await writeFileAtomic(path, JSON.stringify(credential, null, 2), 0o600);
    // The mode given to open() is filtered by umask; make sure of 0600.
    await chmod(path, 0o600);
  }

  async clearCredential(): Promise<void> {
    await rm(join(this.dir, 'credential.json'), { force: true });
  }

  async loadAssignments(): Promise<AssignmentsResponse | undefined> {
    return this.load(join(this.dir, 'assignments.json'), assignmentsResponseSchema);
  }

  async saveAssignments(response: AssignmentsResponse): Promise<void> {
    await writeFileAtomic(join(this.dir, 'assignments.json'), JSON.stringify(response, null, 2));
  }

  /** A cached bundle, only if its content still matches its digest. */
  async loadBundle(digest: string): Promise<Bundle | undefined> {
    const path = this.bundlePath(digest);
    const bundle = await this.load(path, bundleSchema);
    if (bundle && (bundle.digest !== digest || bundleDigest(bundle.manifests) !== digest)) {
      this.corrupt.push(new StateCorruptError(path, 'content does not match its digest'));
      return undefined;
    }
    return bundle;
  }

  async saveBundle(bundle: Bundle): Promise<void> {
    await writeFileAtomic(this.bundlePath(bundle.digest), JSON.stringify(bundle));
  }

  async listBundleDigests(): Promise<string[]> {
    const names = await readdir(join(this.dir, 'bundles'));
    return names.filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -5).replace('-', ':'));
  }

  async loadTargetState(targetId: string): Promise<TargetState> {
    return (await this.load(this.targetPath(targetId), targetStateSchema)) ?? targetStateSchema.parse({});
  }

  async saveTargetState(targetId: string, state: TargetState): Promise<void> {
    await writeFileAtomic(this.targetPath(targetId), JSON.stringify(state, null, 2));
  }

  async loadDeletionProgress(deletionId: string): Promise<DeletionProgress> {
    return (
      (await this.load(this.deletionPath(deletionId), deletionProgressSchema)) ??
      deletionProgressSchema.parse({ deletionId })
    );
  }

  async saveDeletionProgress(progress: DeletionProgress): Promise<void> {
    await writeFileAtomic(this.deletionPath(progress.deletionId), JSON.stringify(progress, null, 2));
  }

  /** The tombstones this agent holds progress for. */
  async listDeletionIds(): Promise<string[]> {
    const names = await readdir(join(this.dir, 'deletions'));
    return names.filter((n) => n.endsWith('.json')).map((n) => decodeURIComponent(n.slice(0, -5)));
  }

  async forgetDeletion(deletionId: string): Promise<void> {
    await rm(this.deletionPath(deletionId), { force: true });
  }

  private deletionPath(deletionId: string): string {
    return join(this.dir, 'deletions', `${encodeURIComponent(deletionId)}.json`);
  }

  private bundlePath(digest: string): string {
    // `sha256:` is not a portable file-name character.
    return join(this.dir, 'bundles', `${digest.replace(':', '-')}.json`);
  }

  private targetPath(targetId: string): string {
    return join(this.dir, 'targets', `${encodeURIComponent(targetId)}.json`);
  }

  private async load<T>(path: string, schema: z.ZodType<T>): Promise<T | undefined> {
    let raw: unknown;
    try {
      raw = await readJsonFile(path);
    } catch (err) {
      this.corrupt.push(new StateCorruptError(path, (err as Error).message));
      return undefined;
    }
    if (raw === undefined) return undefined;
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      this.corrupt.push(new StateCorruptError(path, z.prettifyError(parsed.error)));
      return undefined;
    }
    return parsed.data;
  }
}
