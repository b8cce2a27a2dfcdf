import { type Logger } from 'pino';
import { type AgentConfig } from '../config/agent-config.js';
import { AgentStartError } from '../config/agent-start-error.js';
import { type StateStore } from '../state/state-store.js';
import { rotationDue } from './credential-rotation.js';
import { type HubClient, type HubCallError } from './hub-client.js';

export interface AgentCredentialDeps {
  config: Pick<AgentConfig, 'clusterName' | 'bootstrapToken' | 'stateDir'>;
  store: StateStore;
  hub: HubClient;
  log: Logger;
  now: () => Date;
  /** Aborted when the agent stops: a registration or rotation in flight gives up. */
  signal: AbortSignal;
}

/**
 * The agent's credential with the hub: the stored one, a registration with the bootstrap token when
 * there is none (or the hub said it is gone), and its rotation before it lapses.
 */
export class AgentCredential {
  private credential: string | undefined;
  /**
   * Set when the hub said, in a typed answer, that the credential will never work again. The old one
   * stays on disk and in use until a registration replaces it: a bootstrap token that no longer
   * works must not leave the agent with nothing.
   */
  private gone = false;

  private constructor(private readonly deps: AgentCredentialDeps) {}

  /**
   * The stored credential, or the promise of a registration. Nothing to resume and no way to
   * register fails the start: say so now rather than retry forever.
   */
  static async load(deps: AgentCredentialDeps): Promise<AgentCredential> {
    const keeper = new AgentCredential(deps);
    keeper.credential = (await deps.store.loadCredential())?.credential;
    if (!keeper.credential && !deps.config.bootstrapToken) throw keeper.noWayToRegister();
    return keeper;
  }

  /** The credential in use, if the agent has one yet. */
  get current(): string | undefined {
    return this.credential;
  }

  /** A credential to call the hub with: the one in use, or a new registration when needed. */
  async ensure(): Promise<string> {
    const { config, store, hub, log, now, signal } = this.deps;
    if (this.credential && !(this.gone && config.bootstrapToken)) return this.credential;
    if (!config.bootstrapToken) throw this.noWayToRegister();
    let reg;
    try {
      reg = await hub.register(config.clusterName, config.bootstrapToken, signal);
    } catch (err) {
      // Back to the stored credential for the next try: the hub may yet take it (a restored backup).
      this.gone = false;
      throw err;
    }
    await store.saveCredential({
      clusterName: reg.clusterName,
      clusterId: reg.clusterId,
      credential: reg.credential,
      expiresAt: reg.expiresAt,
      issuedAt: now().toISOString(),
    });
    log.info({ clusterId: reg.clusterId }, 'registered with the hub');
    this.credential = reg.credential;
    this.gone = false;
    return this.credential;
  }

  /**
   * Trades the credential for a new one when a third of its life is left. The new one is stored
   * (atomically: a crash leaves the old or the new file, never half) before it is used; if the agent
   * dies in between, the old one still works for the hub's grace period.
   */
  async rotateIfDue(cred: string): Promise<string> {
    const { store, hub, log, now, signal } = this.deps;
    const stored = await store.loadCredential();
    if (!stored || stored.credential !== cred || !rotationDue(stored, now())) return cred;
    const next = await hub.rotate(cred, signal);
    await store.saveCredential({
      clusterName: next.clusterName,
      clusterId: next.clusterId,
      credential: next.credential,
      expiresAt: next.expiresAt,
      issuedAt: now().toISOString(),
    });
    this.credential = next.credential;
    log.info({ expiresAt: next.expiresAt }, 'rotated the agent credential');
    return next.credential;
  }

  /**
   * The hub's typed answer (hub-credential-gone) that the credential will never work again: the
   * next call registers with the bootstrap token, or the log says to set one.
   */
  markGone(err: HubCallError): void {
    const { config, log } = this.deps;
    this.gone = true;
    log.error(
      { code: err.apiCode, path: err.path },
      config.bootstrapToken
        ? `${err.message}; registering again with the bootstrap token`
        : `${err.message}; set FLOTILLA_BOOTSTRAP_TOKEN to a new bootstrap token for cluster ${config.clusterName}`,
    );
  }

  private noWayToRegister(): AgentStartError {
    const { config } = this.deps;
    return new AgentStartError(
      `no agent credential in ${config.stateDir} and FLOTILLA_BOOTSTRAP_TOKEN is not set: ask an admin for a bootstrap token for cluster ${config.clusterName}`,
      'FLOTILLA_BOOTSTRAP_TOKEN',
    );
  }
}
