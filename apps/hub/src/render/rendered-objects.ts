// Turning a render's output into the objects of a bundle, and the checks every rendered object passes.
import { type KubeObject, resourceSyncOptionsOf, SyncOptionError } from '@flotilla/contract';
import { bundleDigest, parseManifestFiles } from '@flotilla/manifests';
import { preserveSopsKeyOrder } from '@flotilla/sops';
import { RenderError, translateManifestError } from './render-error.js';
import type { Rendered } from './render-source.js';

/**
 * The objects of `files` as a bundle; no objects at all is refused (`what` names the input).
 * `dir`: the directory the file paths are relative to (errors name the repository file).
 */
export function parseRendered(
  files: { path: string; content: string }[],
  where: string,
  dir: string | undefined,
  what: string,
): Rendered {
  const objects = translateManifestError(
    where,
    () =>
      parseManifestFiles(files).map((o) =>
        // The bundle is stored as jsonb, which re-sorts keys; SOPS's MAC depends on their order, so
        // encrypted objects carry it along (ciphertext only: the hub never decrypts).
        preserveSopsKeyOrder(o),
      ),
    dir,
  );
  if (objects.length === 0) {
    throw new RenderError('no-manifests', `${what} declares no Kubernetes objects`, where);
  }
  return { digest: bundleDigest(objects), manifests: objects };
}

/**
 * Every rendered object's sync and compare options are ones the agent honours: one it would ignore
 * (Replace=true, Prune=confirm, …) refuses the render, naming the object and the annotation entry.
 */
export function checkResourceOptions(manifests: readonly KubeObject[], where: string): void {
  for (const m of manifests) {
    try {
      resourceSyncOptionsOf(m);
    } catch (e) {
      if (!(e instanceof SyncOptionError)) throw e;
      const ns = m.metadata.namespace ? `${m.metadata.namespace}/` : '';
      throw new RenderError(e.code, `${m.kind} ${ns}${m.metadata.name}: ${e.message}`, `${where} ${e.path}`);
    }
  }
}
