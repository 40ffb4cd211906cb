import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

/**
 * Integration files that use no Kafka broker, neither the shared one (global-setup.ts) nor one of
 * their own: they need not wait their turn in the serial integration project. A file that comes
 * to use Kafka moves back (it would find no broker here: `inject('kafkaBootstrap')` is unset).
 */
const NO_KAFKA_FILES = [
  'test/integration/cli.int.test.ts',
  'test/integration/cli-stuck-start.int.test.ts',
  'test/integration/connect-transforms.int.test.ts',
  'test/integration/json-converter.int.test.ts',
  'test/integration/rest-cross-origin.int.test.ts',
  'test/integration/scaffold.int.test.ts',
  'test/integration/standalone-embedded.int.test.ts',
  'test/integration/status-page.int.test.ts',
  'examples/postgres-cdc/test/*.int.test.ts',
];

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
        // Integration files that need no Kafka broker (child processes, browsers, Postgres, the
        // Java oracles, npm create): npm test (scripts/run-tests.mjs) runs them, with the unit
        // project, beside the serial integration project below.
        extends: true,
        test: {
          name: 'integration-no-kafka',
          include: NO_KAFKA_FILES,
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.int.test.ts', 'examples/*/test/**/*.int.test.ts'],
          exclude: ['**/node_modules/**', ...NO_KAFKA_FILES],
          globalSetup: ['test/integration/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
