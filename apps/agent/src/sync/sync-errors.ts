/** Stops the run: later waves and phases are not applied, nothing is pruned, SyncFail hooks run. */
export class SyncAborted extends Error {}

/** A person terminated the run: it stops like SyncAborted, but runs no SyncFail hooks either. */
export class SyncTerminated extends Error {}
