// How the hub renders manifests: which kustomize and helm, what charts see, and each render's time, output and concurrency bounds.
import { availableParallelism } from 'node:os';
import { DEFAULT_KUBE_VERSION } from '@flotilla/manifests';
import { z } from 'zod';

export const renderEnv = z.object({
  KUSTOMIZE_BINARY: z
    .string()
    .min(1)
    .optional()
    .describe(
      'A `kustomize` binary to render kustomizations with; unset = `kubectl kustomize` (kubectl on PATH).',
    ),
  KUSTOMIZE_ALLOW_REMOTE_BASES: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true')
    .describe('Let kustomizations load remote bases (URLs, github.com/...); off, such a render is refused.'),
  HELM_BINARY: z
    .string()
    .min(1)
    .optional()
    .describe(
      'The `helm` binary that renders charts; unset = the first `helm` on PATH, else the Helm `npm ci` unpacked.',
    ),
  HELM_KUBE_VERSION: z
    .string()
    .regex(/^v?\d+\.\d+(\.\d+)?([-+][0-9A-Za-z.+-]*)?$/, 'must be a Kubernetes version such as 1.32.0')
    .default(DEFAULT_KUBE_VERSION)
    .describe(
      "The Kubernetes version charts see as .Capabilities.KubeVersion until their cluster's agent reports its own (unless source.helm.kubeVersion).",
    ),
  HELM_REPOSITORY_CACHE_SECONDS: z.coerce
    .number()
    .min(0)
    .default(60)
    .describe("How long a Helm repository's index.yaml is reused before the hub fetches it again."),
  HELM_REPOSITORY_POLL_SECONDS: z.coerce
    .number()
    .min(0)
    .default(180)
    .describe(
      'How often every chart version range is resolved again, so a chart published within a range reaches the fleet without a Git change (one check fleet-wide); 0 = only when an appset is expanded.',
    ),
  RENDER_TIMEOUT_SECONDS: z.coerce
    .number()
    .positive()
    .default(60)
    .describe(
      'Longest one kustomize build or helm template may run before it is killed and the render fails.',
    ),
  RENDER_MAX_OUTPUT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(32 * 1024 * 1024)
    .describe('Largest output one kustomize build or helm template may write; more fails the render.'),
  RENDER_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(0)
    .default(0)
    .describe(
      'Most renders (helm template, kustomize build, plain reads) one hub process runs at once; 0 = one per CPU. An expansion with 1,000 distinct charts queues them instead of starting 1,000 processes.',
    ),
});

export interface RenderConfig {
  kustomizeBinary: string | null;
  allowRemoteBases: boolean;
  /** HELM_BINARY; null = PATH, then the bundled Helm (resolveHelmBinary). */
  helmBinary: string | null;
  /** What charts see as .Capabilities.KubeVersion. */
  helmKubeVersion: string;
  /** How long a fetched Helm repository index is reused. */
  helmRepositoryCacheSeconds: number;
  /** How often chart version ranges are resolved again (0 = never on its own). */
  helmRepositoryPollSeconds: number;
  timeoutSeconds: number;
  maxOutputBytes: number;
  /** Renders run at once by one hub process (RENDER_CONCURRENCY; 0 was read as one per CPU). */
  concurrency: number;
}

export function renderConfig(e: z.output<typeof renderEnv>): RenderConfig {
  return {
    kustomizeBinary: e.KUSTOMIZE_BINARY ?? null,
    allowRemoteBases: e.KUSTOMIZE_ALLOW_REMOTE_BASES,
    helmBinary: e.HELM_BINARY ?? null,
    helmKubeVersion: e.HELM_KUBE_VERSION,
    helmRepositoryCacheSeconds: e.HELM_REPOSITORY_CACHE_SECONDS,
    helmRepositoryPollSeconds: e.HELM_REPOSITORY_POLL_SECONDS,
    timeoutSeconds: e.RENDER_TIMEOUT_SECONDS,
    maxOutputBytes: e.RENDER_MAX_OUTPUT_BYTES,
    concurrency: e.RENDER_CONCURRENCY === 0 ? availableParallelism() : e.RENDER_CONCURRENCY,
  };
}
