import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

export default defineConfig({
  resolve: {
    // Examples import 'tributary-connect' as an author would; in this repo that is the source.
    alias: [
      { find: /^tributary-connect\/testing$/, replacement: src('testing/index.ts') },
      { find: /^tributary-connect\/runtime$/, replacement: src('runtime-entry.ts') },
      { find: /^tributary-connect$/, replacement: src('index.ts') },
    ],
  },
  test: {
    // Stopping the test broker cleanly can take a while on a loaded 2-core machine.
    teardownTimeout: 60_000,
    // kafkajs with Tributary's fixes, loaded first in every test file (see the file).
    setupFiles: ['test/kafkajs-fixes-setup.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'examples/*/test/**/*.test.ts'],
          exclude: ['**/*.int.test.ts', '**/node_modules/**'],
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.int.test.ts', 'examples/*/test/**/*.int.test.ts'],
          exclude: ['**/node_modules/**'],
          globalSetup: ['test/integration/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
