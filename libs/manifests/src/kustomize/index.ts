export * from './repo-paths.js';
export * from './kustomization.js';
export * from './kustomize-options.js';
export * from './kustomize-runner.js';
