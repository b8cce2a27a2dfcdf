export * from './chart-repository.js';
export * from './helm-binary.js';
export * from './render-application.js';
export * from './tool-process.js';
export * from './kustomize-process.js';
export * from './oci-registry.js';
export * from './chart-provenance.js';
