// The deployable agent: dist/main.js and everything it imports, tree-shaken into dist/bundle/
// (flotilla-agent.mjs plus the chunks it loads lazily, such as the Lua runtime).
// @kubernetes/client-node's index loads every generated API group and model (~80 MB of RSS at
// start-up); bundled, only what the agent calls is kept. See docs/benchmarks.md (agent RSS).
import { defineConfig } from 'rolldown';

export default defineConfig({
  input: 'dist/main.js',
  platform: 'node',
  // wasmoon loads its .wasm file from beside its own module: leave it in node_modules.
  external: ['wasmoon'],
  // client-node declares no `sideEffects`, and each generated model module assigns static fields at
  // its top level, so the bundler kept all ~750 of them (and the APIs) although the agent uses only
  // KubeConfig and Watch: 1.3 MB of source parsed and ~750 classes built at every start. Its modules
  // only define things (the one exception, a `File` polyfill for Node 18, is kept).
  treeshake: {
    moduleSideEffects: (id) =>
      !/[\\/]@kubernetes[\\/]client-node[\\/]dist[\\/]/.test(id) || /[\\/]polyfill\.js$/.test(id),
  },
  logLevel: 'warn',
  output: {
    dir: 'dist/bundle',
    entryFileNames: 'flotilla-agent.mjs',
    format: 'esm',
    cleanDir: true,
    // V8 keeps every module's source text; without comments and whitespace it is a third of the size,
    // and pure ASCII is stored one byte per character instead of two. Names stay unmangled so stack
    // traces still read.
    minify: { mangle: false, compress: false },
    charset: 'ascii',
  },
});
