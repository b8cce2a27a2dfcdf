/**
 * Codes the hub answers an agent with when the answer is final for what the agent sent, as opposed
 * to a passing failure (a proxy's 401, an ingress's 404 or 413, a 5xx). An agent acts on these codes
 * only; any other refusal it keeps its credential and its reports and tries again later.
 */
export const AGENT_REFUSAL = {
  /** 401: an admin revoked the cluster's credential. */
  credentialRevoked: 'credential-revoked',
  /** 401: a rotation replaced this credential and its grace period is over (or it may not rotate). */
  credentialRotated: 'credential-rotated',
  /** 401: the credential's lifetime ended before it was rotated. */
  credentialExpired: 'credential-expired',
  /** 401: the hub issued no such credential (the cluster was deleted, or registered again). */
  credentialUnknown: 'credential-unknown',
  /** 400 on `POST reports`: the hub read the batch and it does not match the report contract. */
  reportsInvalid: 'reports-invalid',
} as const;

/** The refusals after which the agent's credential will never work again: register anew. */
export const CREDENTIAL_GONE_CODES: readonly string[] = [
  AGENT_REFUSAL.credentialRevoked,
  AGENT_REFUSAL.credentialRotated,
  AGENT_REFUSAL.credentialExpired,
  AGENT_REFUSAL.credentialUnknown,
];
