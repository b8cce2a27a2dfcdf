import type { ClusterCapabilities } from '@flotilla/contract';
import type { Logger } from 'pino';

/**
 * Tells the hub what the cluster serves (discovery: Kubernetes version, group/versions), which the
 * hub renders this cluster's charts with as `.Capabilities`. Discovery is read at start and again
 * at most every `everyMs` (an upgraded cluster, a CRD installed); the hub hears only a change. Best
 * effort: a failure is logged and tried again sooner, and until the hub hears it renders with its
 * own default — reconciling never waits on it.
 */
export class CapabilitiesReporter {
  /** What the hub acknowledged last, as JSON. */
  private sent: string | undefined;
  private nextAt = 0;

  constructor(
    private readonly read: () => Promise<ClusterCapabilities>,
    private readonly send: (credential: string, capabilities: ClusterCapabilities) => Promise<unknown>,
    private readonly log: Logger,
    private readonly everyMs = 5 * 60_000,
    private readonly retryMs = 30_000,
    private readonly now: () => number = Date.now,
  ) {}

  async reportIfDue(credential: string): Promise<void> {
    if (this.now() < this.nextAt) return;
    try {
      const capabilities = await this.read();
      const json = JSON.stringify(capabilities);
      if (json !== this.sent) {
        await this.send(credential, capabilities);
        this.sent = json;
        this.log.info(
          { kubeVersion: capabilities.kubeVersion, apiVersions: capabilities.apiVersions.length },
          'reported the cluster capabilities to the hub',
        );
      }
      this.nextAt = this.now() + this.everyMs;
    } catch (err) {
      const e = err as Error & { code?: string };
      this.nextAt = this.now() + this.retryMs;
      this.log.warn(
        { code: e.code },
        `could not report the cluster capabilities (${e.message}); the hub renders charts with its default version until it hears`,
      );
    }
  }
}
