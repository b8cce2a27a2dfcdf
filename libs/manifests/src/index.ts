export * from './canonical-json.js';
export * from './manifest-error.js';
export * from './parse-manifests.js';
export * from './bundle-digest.js';
export * from './kustomize/index.js';
export * from './helm/index.js';
