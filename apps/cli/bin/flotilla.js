#!/usr/bin/env node
// The `flotilla` command. The compiled CLI lives in ../dist (built by `npm ci`'s postinstall and by `npm run build`).
import('../dist/main.js').catch((err) => {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/main.js')) {
    console.error('flotilla: the CLI is not built yet; run `npm run build` at the repository root');
    process.exit(2);
  }
  throw err;
});
