import { randomUUID } from 'node:crypto';
import { type Assignment, type Bundle, type Report } from '@flotilla/contract';
import { type Logger } from 'pino';
import { BundleDecryptError, type BundleDecryptor } from '../secrets/bundle-decryptor.js';

/**
 * Bundles in plaintext, just before they are used. A bundle whose secrets cannot be decrypted here
 * leaves its target on its last good revision, and the hub hears why once per target and bundle.
 */
export class PlaintextBundles {
  /** `targetId@digest` of the bundles already reported as undecryptable. */
  private readonly failures = new Set<string>();

  constructor(
    private readonly decryptor: BundleDecryptor,
    private readonly emit: (reports: Report[]) => Promise<void>,
    private readonly log: Logger,
    private readonly now: () => Date,
  ) {}

  /** The bundle in plaintext, or undefined (reported) when its secrets cannot be decrypted here. */
  async of(a: Assignment, bundle: Bundle): Promise<Bundle | undefined> {
    try {
      return await this.decryptor.plaintext(bundle);
    } catch (err) {
      if (!(err instanceof BundleDecryptError)) throw err;
      const key = `${a.targetId}@${bundle.digest}`;
      if (!this.failures.has(key)) {
        this.failures.add(key);
        this.log.error(
          { target: a.name, err: err.message },
          'bundle not applied: cannot decrypt its secrets',
        );
        const at = this.now().toISOString();
        await this.emit([
          {
            type: 'sync',
            id: randomUUID(),
            targetId: a.targetId,
            at,
            revision: a.revision,
            bundleDigest: a.bundleDigest,
            trigger: 'auto',
            outcome: 'Failed',
            startedAt: at,
            finishedAt: at,
            message: err.message,
            resources: [],
          },
        ]);
      }
      return undefined;
    }
  }
}
