// The deployable agent: dist/main.js and everything it imports, tree-shaken into dist/bundle/
// (flotilla-agent.mjs plus the chunks it loads lazily, such as the Lua runtime).
// @kubernetes/client-node's index loads every generated API group and model (~80 MB of RSS at
// start-up); bundled, only what the agent calls is kept. See docs/benchmarks.md (agent RSS).
import { defineConfig } from 'rolldown';

/**
 * undici's cookie helpers (which the agent never calls) read `globalThis.Headers` when the module
 * loads, to accept Node's Headers too; that getter loads Node's own copy of undici, which the agent
 * does not use otherwise (~1 MB of heap for its code). Bundled, the helpers accept undici's Headers.
 */
function undiciCookiesOwnHeadersOnly() {
  return {
    name: 'undici-cookies-own-headers-only',
    transform(code, id) {
      if (!/[\\/]undici[\\/]lib[\\/]web[\\/]cookies[\\/]index\.js$/.test(id)) return null;
      const patched = code.replace('[Headers, globalThis.Headers]', '[Headers]');
      // A new undici that reads it differently: fail the build rather than quietly keep the cost.
      if (patched === code) throw new Error(`${id}: globalThis.Headers no longer read as expected`);
      return { code: patched, map: null };
    },
  };
}

const CLIENT_NODE = /[\\/]@kubernetes[\\/]client-node[\\/]dist[\\/]/;
const FLOTILLA_LIB = /[\\/]libs[\\/][a-z-]+[\\/]dist[\\/]/;

export default defineConfig({
  input: 'dist/main.js',
  platform: 'node',
  // wasmoon loads its .wasm file from beside its own module: leave it in node_modules.
  external: ['wasmoon'],
  // client-node declares no `sideEffects`, and each generated model module assigns static fields at
  // its top level, so the bundler kept all ~750 of them (and the APIs) although the agent uses only
  // KubeConfig and Watch: 1.3 MB of source parsed and ~750 classes built at every start. Its modules
  // only define things (the one exception, a `File` polyfill for Node 18, is kept).
  //
  // Flotilla's own libs are imported through their barrels (`@flotilla/contract` and the like), so
  // every module of a lib the agent touches was kept: the hub's API views, the appset generators,
  // Go templates, ~2,000 zod schemas built at start and held for good (~2.4 kB of heap each). Their
  // modules only define things too; the one top-level effect, views registering themselves in
  // `apiAnswers` for the hub's OpenAPI document, is of no use to the agent.
  treeshake: {
    moduleSideEffects: (id) =>
      !(CLIENT_NODE.test(id) || FLOTILLA_LIB.test(id)) || /[\\/]polyfill\.js$/.test(id),
  },
  plugins: [undiciCookiesOwnHeadersOnly()],
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
