import { defineConfig } from 'vitest/config';

// Tests run straight from the TypeScript sources through the custom export condition,
// so no build is needed before `vitest`.
export default defineConfig({
  resolve: { conditions: ['@flotilla/source'] },
  ssr: { resolve: { conditions: ['@flotilla/source'] } },
  test: {
    include: ['{apps,libs}/*/src/**/*.spec.ts', 'test/**/*.spec.ts'],
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
