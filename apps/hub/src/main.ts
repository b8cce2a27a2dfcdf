import 'reflect-metadata';
import { HubConfigError, devModeWarnings, loadHubConfig } from './config/hub-config.js';
import { createHubApp } from './hub-app.js';

// The one place the environment is read.
let config;
try {
  config = loadHubConfig(process.env);
} catch (e) {
  if (e instanceof HubConfigError) {
    process.stderr.write(`flotilla hub: ${e.message}\n`);
    process.exit(2);
  }
  throw e;
}
// Before anything can fail, so that whoever reads the log sees it first (and again on /readyz).
for (const warning of devModeWarnings(config)) {
  process.stderr.write(`${JSON.stringify({ level: 40, msg: `flotilla hub: ${warning}` })}\n`);
}

let app: Awaited<ReturnType<typeof createHubApp>>;
try {
  app = await createHubApp(config);
  await app.listen(config.http.port, config.http.host);
} catch (e) {
  // Configuration read at start (FLOTILLA_HEALTH_LUA_DIR's scripts) is refused like the environment.
  if (e instanceof HubConfigError) {
    process.stderr.write(`flotilla hub: ${e.message}\n`);
    process.exit(2);
  }
  // Most often PostgreSQL or Redis does not answer: say which, in one line, and stop.
  process.stderr.write(`flotilla hub: cannot start: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
}

// Like Nest's enableShutdownHooks (app.close() runs every shutdown hook: long-polls are answered,
// workers drain, connections close), but then exit 0, so supervisors see a clean stop rather than
// death by signal. A second signal while closing forces the exit.
let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(1);
    stopping = true;
    app.close().then(
      () => process.exit(0),
      (e: unknown) => {
        process.stderr.write(`flotilla hub: error while stopping: ${String(e)}\n`);
        process.exit(1);
      },
    );
  });
}

const address = app.getHttpServer().address();
const port = typeof address === 'object' && address ? address.port : config.http.port;
process.stdout.write(
  `${JSON.stringify({ level: 30, msg: 'flotilla hub listening', url: `http://${config.http.host}:${port}`, roles: config.roles })}\n`,
);
