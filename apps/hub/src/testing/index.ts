// Helpers for tests that need the real services: a throwaway PostgreSQL database, a private Redis
// prefix, a Git repository with commits, and the whole hub booted on a free port.
export * from './test-database.js';
export * from './test-redis.js';
export * from './test-git-repo.js';
export * from './test-hub.js';
export * from './wait-for-idle.js';
export * from './test-notification-receiver.js';
export * from './test-git-host-api.js';
export * from './test-helm-repository.js';
// How the hub reads FLOTILLA_HEALTH_LUA_DIR at start, for tests of what the chart mounts there.
export { loadHubHealthRules } from '../health-rules/hub-health-rules.js';
export * from './test-git-daemon.js';
