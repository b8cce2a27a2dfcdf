export * from './kube-object.js';
export * from './status.js';
export * from './sync-window.js';
export * from './ignore-rule.js';
export * from './agent-protocol.js';
export * from './queues.js';
export * from './api-error.js';
export * from './audit-event.js';
