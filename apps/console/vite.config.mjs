import { defineConfig, defaultClientConditions } from 'vite';
import react from '@vitejs/plugin-react';

// The console imports the contract's types and constants from source (the same condition the
// monorepo's TypeScript uses), so it needs no prior library build.
export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  plugins: [react()],
  resolve: { conditions: ['@flotilla/source', ...defaultClientConditions] },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    // The hub's CSP allows no inline script: Vite's module preload polyfill would be one.
    modulePreload: { polyfill: false },
  },
  server: {
    host: '127.0.0.1',
    proxy: { '/api': process.env.FLOTILLA_HUB_URL ?? 'http://127.0.0.1:8080' },
  },
});
