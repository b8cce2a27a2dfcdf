/**
 * GET /api/v1/explain?cluster=X&appset=Y — why a cluster gets (or does not get) an ApplicationSet's
 * targets, at which revision, and what holds them. Answered by the hub, printed by `flotilla explain`.
 */
export interface ExplainView {
  cluster: string;
  appSet: string;
  /** When the answer was computed (ISO). */
  at: string;
  /** Whether any generator gives the cluster a target. */
  matched: boolean;
  /** The appset's expansion state: Ready, Pending, Held (deletion guard) or Error, with why. */
  appSetStatus: { status: string; error: unknown; heldMessage: string | null };
  generators: ExplainGeneratorView[];
  targets: ExplainTargetView[];
}

export interface ExplainGeneratorView {
  index: number;
  path: string;
  type: string;
  verdict: 'matched' | 'not-matched' | 'error';
  reasons: string[];
  selectors: {
    path: string;
    matched: boolean;
    unmet: { field: string; requirement: string; actual: string }[];
  }[];
  produced: number;
  kept: number;
  /** Names of the targets this generator gives the cluster. */
  targets: string[];
}

export interface ExplainTargetView {
  name: string;
  /** `spec.generators[i]` that produced it. */
  generator: string;
  /** The parameter set the template was rendered with (the values applied). */
  params: Record<string, unknown>;
  source: Record<string, unknown>;
  destination: { name?: string; server?: string; namespace?: string };
  /** What the requested revision resolves to in the hub's mirror now (null: not resolvable). */
  resolvedRevision: string | null;
  /** The target as stored (null: not created yet — expansion pending, held, or failing). */
  stored: {
    desiredRevision: string;
    bundleDigest: string | null;
    lastSyncedRevision: string | null;
    lastSyncedDigest: string | null;
    health: string;
  } | null;
  /** The determinism check of its render, when the hub has rendered it. */
  render: { renderer: string; deterministic: boolean } | null;
  /** What keeps it from reaching (or changing on) the cluster now; empty: nothing. */
  holds: ExplainHoldView[];
}

export interface ExplainHoldView {
  kind:
    | 'not-expanded'
    | 'deletion-guard'
    | 'appset-error'
    | 'sync-window'
    | 'break-glass'
    | 'render'
    | 'admission-policy';
  message: string;
}
