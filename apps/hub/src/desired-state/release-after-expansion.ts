/**
 * What follows an expansion that changed targets: the release stage decides when each changed target
 * reaches its cluster (at once, or wave by wave under a rollout strategy). Declared here and provided
 * by release/ (the rollouts service), so desired state hands its result on without importing the
 * stage that comes after it. The call stays in the expansion, not on a queue: the expansion returns
 * only once its targets are released or held, as before.
 */
export abstract class ReleaseAfterExpansion {
  /** Returns the clusters it woke (after its own commit), so the expansion does not wake them again. */
  abstract afterExpansion(appSetId: string): Promise<ReadonlySet<string>>;
}
