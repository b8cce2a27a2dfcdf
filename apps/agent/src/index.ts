export { startAgent, AGENT_VERSION, AgentStartError, type Agent, type AgentOptions } from './agent.js';
export {
  loadAgentConfig,
  agentEnvSchema,
  AgentConfigError,
  type AgentConfig,
  type LogLevel,
} from './config/agent-config.js';
