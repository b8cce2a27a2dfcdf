/** A start the agent cannot make (no credential and no token, an unreadable key or kubeconfig, a taken port), naming the variable to fix. */
export class AgentStartError extends Error {
  readonly code = 'agent-start-failed';
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
    this.name = 'AgentStartError';
  }
}
