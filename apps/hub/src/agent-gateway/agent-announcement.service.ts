// What an agent says of itself on its calls: its version and the features it supports.
import { Injectable } from '@nestjs/common';
import { AGENT_FEATURES_HEADER, AGENT_VERSION_HEADER, parseAgentFeatures } from '@flotilla/contract';
import { Database } from '../db/database.js';
import type { Cluster } from '../generated/prisma/client.js';

type Headers = Record<string, string | string[] | undefined>;

/**
 * Keeps `Cluster.agentFeatures` (and `agentVersion`) as the agent last announced them, so a sync
 * asking for what the agent cannot do is refused at once (operations/agent-support.ts) instead of
 * being run by an older agent as a plain sync. Written only when they changed: an upgrade or a
 * rollback of the agent, not every long-poll. An agent that sends no header announces nothing.
 */
@Injectable()
export class AgentAnnouncement {
  constructor(private readonly db: Database) {}

  async note(cluster: Cluster, headers: Headers): Promise<void> {
    const features = parseAgentFeatures(single(headers[AGENT_FEATURES_HEADER]));
    const version = single(headers[AGENT_VERSION_HEADER])?.trim().slice(0, 100) || cluster.agentVersion;
    if (features.join(',') === cluster.agentFeatures.join(',') && version === cluster.agentVersion) return;
    await this.db.prisma.cluster.update({
      where: { id: cluster.id },
      data: { agentFeatures: features, agentVersion: version },
    });
    cluster.agentFeatures = features;
    cluster.agentVersion = version;
  }
}

function single(h: string | string[] | undefined): string | undefined {
  return Array.isArray(h) ? h.join(',') : h;
}
