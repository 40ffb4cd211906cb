import { defineConfig, type Options } from 'tsup';

const common: Options = {
  dts: true,
  sourcemap: true,
  target: 'node20',
  splitting: true,
  // The contract suite uses the user's own vitest, never a bundled copy.
  external: ['vitest'],
};

export default defineConfig([
  {
    ...common,
    entry: { index: 'src/index.ts', 'testing/index': 'src/testing/index.ts', 'runtime/index': 'src/runtime-entry.ts' },
    format: ['esm'],
    clean: true,
  },
  {
    ...common,
    // CommonJS: the same entries, but tributary/testing without the vitest contract suite
    // (it loads vitest with a top-level await, which CommonJS cannot do).
    entry: { index: 'src/index.ts', 'testing/index': 'src/testing/core.ts', 'runtime/index': 'src/runtime-entry.ts' },
    format: ['cjs'],
    // `import.meta.url` (the REST API finds its package.json by it) has no meaning in
    // CommonJS: tsup's shim gives it the file's URL, so require('tributary-connect/runtime') loads.
    shims: true,
  },
  {
    // The kafkajs producer thread (src/kafka/kafkajs-thread.ts) loads its script from beside the CLI.
    entry: { 'cli/main': 'src/cli/main.ts', 'cli/kafkajs-producer-thread': 'src/kafka/kafkajs-producer-thread.ts' },
    format: ['esm'],
    sourcemap: true,
    target: 'node20',
    banner: { js: '#!/usr/bin/env node' },
  },
]);
