#!/usr/bin/env node
import { setFlagsFromString } from 'node:v8';
import { AgentConfigError, loadAgentConfig } from './config/agent-config.js';

// The agent is idle most of the time and works in short bursts (a sync, a heal). By default V8
// doubles its young generation under allocation pressure up to 32 MB and keeps it, and lets the old
// generation grow to several times what is live before collecting it, so a burst's garbage stays
// resident while the agent idles. Held at its initial size, and with V8 tuned for footprint, GCs get
// a little more frequent and the process is ~80 MB smaller (docs/benchmarks.md, agent RSS).
setFlagsFromString('--semi-space-growth-factor=1');
setFlagsFromString('--optimize-for-size');
// After a burst V8's memory reducer collects and gives back the burst's garbage once allocation has
// been quiet for a while (8 s by default). Meant to bring that to 2 s; measured, the burst's pages
// still come back 7-9 s after the agent goes quiet (README, Memory), so this moves little if anything.
setFlagsFromString('--gc-memory-reducer-start-delay-ms=2000');

let config;
try {
  config = loadAgentConfig(process.env);
} catch (err) {
  if (err instanceof AgentConfigError) {
    console.error(`flotilla-agent: ${err.message}`);
    process.exit(2);
  }
  throw err;
}

// Loaded only once the configuration is known good, so a wrong variable is reported at once.
const { pino } = await import('pino');
const { startAgent, AgentStartError } = await import('./agent.js');
const log = pino({ level: config.logLevel });
try {
  const agent = await startAgent(config, { logger: log });
  const shutdown = (signal: string): void => {
    log.info({ signal }, 'stopping');
    agent.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'unclean stop');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
} catch (err) {
  log.fatal({ err }, 'agent failed to start');
  if (err instanceof AgentStartError) {
    console.error(`flotilla-agent: ${err.path}: ${err.message}`);
    process.exit(2);
  }
  process.exit(1);
}
