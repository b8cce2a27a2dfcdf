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
await app.listen(config.http.port, config.http.host);
const address = app.getHttpServer().address();
const port = typeof address === 'object' && address ? address.port : config.http.port;
process.stdout.write(
  `${JSON.stringify({ level: 30, msg: 'flotilla hub listening', url: `http://${config.http.host}:${port}`, roles: config.roles })}\n`,
);
