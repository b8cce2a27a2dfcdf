import { KubeConfig } from '@kubernetes/client-node';
import { type AgentConfig } from '../config/agent-config.js';
import { AgentStartError } from '../config/agent-start-error.js';

/** The cluster connection: the kubeconfig KUBECONFIG names, else the pod's service account. */
export function loadKubeConfig(config: AgentConfig): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (config.kubeconfigPath) kc.loadFromFile(config.kubeconfigPath);
    else kc.loadFromCluster();
  } catch (err) {
    throw new AgentStartError(
      config.kubeconfigPath
        ? `cannot read the kubeconfig ${config.kubeconfigPath}: ${(err as Error).message}`
        : `KUBECONFIG is not set and no in-cluster service account is available: ${(err as Error).message}`,
      'KUBECONFIG',
    );
  }
  return kc;
}
