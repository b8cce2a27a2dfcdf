/**
 * The port through which rendering runs kustomize: the hub implements it by spawning
 * `kubectl kustomize` or `kustomize build` with a timeout and an output cap; tests may too.
 */
export interface KustomizeRunner {
  /** Builds the kustomization in the absolute directory `dir`; resolves to its YAML output. */
  build(dir: string): Promise<string>;
}
