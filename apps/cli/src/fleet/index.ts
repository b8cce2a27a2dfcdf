export * from './process-supervisor.js';
export * from './wait-for.js';
export * from './free-port.js';
export * from './redis-server.js';
export * from './hub-client.js';
export * from './git-daemon.js';
export * from './local-fleet.js';
