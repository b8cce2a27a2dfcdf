import 'reflect-metadata';
import { ConfigError, loadHubConfig } from './config/hub-config.js';
import { createHubApp } from './hub-app.js';

// The one place the environment is read.
let config;
try {
  config = loadHubConfig(process.env);
} catch (e) {
  if (e instanceof ConfigError) {
    process.stderr.write(`flotilla hub: ${e.message}\n`);
    process.exit(2);
  }
  throw e;
}

const app = await createHubApp(config);

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

await app.listen(config.http.port, config.http.host);
const address = app.getHttpServer().address();
const port = typeof address === 'object' && address ? address.port : config.http.port;
process.stdout.write(
  `${JSON.stringify({ level: 30, msg: 'flotilla hub listening', url: `http://${config.http.host}:${port}`, roles: config.roles })}\n`,
);
