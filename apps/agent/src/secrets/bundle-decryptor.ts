import { type Bundle, type KubeObject, type ObjectRef, refOf } from '@flotilla/contract';
import { type SopsError, decryptSopsObject, isSopsEncrypted, parseAgeIdentities } from '@flotilla/sops';

/**
 * The objects of each plaintext bundle that Git holds SOPS-encrypted. Whatever the agent tells the
 * hub about them (a comparison's diff) must carry no value: the hub never learns what they hold.
 */
const encryptedIn = new WeakMap<Bundle, readonly ObjectRef[]>();

/** The objects of a bundle `plaintext` made that were SOPS-encrypted in Git (none for any other). */
export function sopsEncryptedRefs(bundle: Bundle): readonly ObjectRef[] {
  return encryptedIn.get(bundle) ?? [];
}

/** Why a bundle could not be made plaintext; the target keeps its last good revision. */
export class BundleDecryptError extends Error {
  readonly code = 'bundle-decrypt-failed';
  constructor(
    readonly object: string,
    readonly reason: SopsError | Error,
  ) {
    super(`cannot decrypt ${object}: ${reason.message}`);
    this.name = 'BundleDecryptError';
  }
}

/**
 * Turns bundles holding SOPS-encrypted objects into plaintext, in memory only: the hub and the
 * on-disk cache keep the ciphertext, and the age keys never leave this process. Every value and the
 * MAC are verified, so a tampered bundle is refused whole rather than applied in part.
 */
export class BundleDecryptor {
  private readonly identities: string[];
  private readonly cache = new Map<string, Bundle>();

  constructor(ageKeyText: string | undefined) {
    this.identities = ageKeyText ? parseAgeIdentities(ageKeyText) : [];
  }

  get hasKeys(): boolean {
    return this.identities.length > 0;
  }

  async plaintext(bundle: Bundle): Promise<Bundle> {
    if (!bundle.manifests.some((m) => isSopsEncrypted(m))) return bundle;
    const cached = this.cache.get(bundle.digest);
    if (cached) return cached;
    const manifests: KubeObject[] = [];
    for (const m of bundle.manifests) {
      if (!isSopsEncrypted(m)) {
        manifests.push(m);
        continue;
      }
      const name = `${m.kind} ${m.metadata.namespace ? `${m.metadata.namespace}/` : ''}${m.metadata.name}`;
      if (!this.hasKeys) {
        throw new BundleDecryptError(
          name,
          new Error('it is SOPS-encrypted and this agent has no age key (set SOPS_AGE_KEY_FILE)'),
        );
      }
      try {
        manifests.push((await decryptSopsObject(m, { ageIdentities: this.identities })) as KubeObject);
      } catch (err) {
        throw new BundleDecryptError(name, err as Error);
      }
    }
    const plain = { ...bundle, manifests };
    encryptedIn.set(plain, bundle.manifests.filter((m) => isSopsEncrypted(m)).map(refOf));
    // Only the current few bundles are ever needed; keep the cache from growing with history.
    if (this.cache.size >= 32) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(bundle.digest, plain);
    return plain;
  }
}
