export * from './application-source.js';
export * from './chart-version.js';
export * from './helm-options.js';
export * from './helm-template-args.js';
export * from './build-env.js';
export * from './oci-reference.js';
export * from './chart-dependencies.js';
export * from './armored-keyring.js';
