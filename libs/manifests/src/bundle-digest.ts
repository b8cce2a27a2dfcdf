import { createHash } from 'node:crypto';
import type { KubeObject } from '@flotilla/contract';
import { canonicalJson } from './canonical-json.js';

/**
 * The content address of a rendered bundle: `sha256:<hex>` of the canonical JSON of its manifests.
 * Hub, agent and any cache compute it the same way, so each can verify what it holds.
 */
export function bundleDigest(manifests: readonly KubeObject[]): string {
  return `sha256:${createHash('sha256').update(canonicalJson(manifests)).digest('hex')}`;
}

export function verifyBundleDigest(manifests: readonly KubeObject[], digest: string): boolean {
  return bundleDigest(manifests) === digest;
}
