/**
 * Builds what the benchmark runs in Node into `bench/.work/build`, with tsup (esbuild) and the
 * settings of the project's own build (tsup.config.ts: ESM, node20, packages in `dependencies`
 * left external), from the current sources, so no run pays for TypeScript compilation at start
 * and `dist/` (which other work may be rebuilding) is not touched:
 *
 * - `tributary-cli.js`: src/cli/main.ts, i.e. `dist/cli/main.js`;
 * - `file-source.js`, `datagen.js`: the example connectors, each with its own copy of the
 *   `tributary-connect` API (as a connector package depending on `tributary-connect` would have; classes are
 *   recognised across copies by a `Symbol.for` brand);
 * - `kafkajs-raw-producer.js`, `librdkafka-raw-producer.js`: the raw producers (bench/contenders/);
 * - `synthetic-source.js`: the synthetic connector of the partitions series (bench/lib/synthetic-connector.ts).
 */
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'tsup';
import { WORK_DIR } from '../connect/fetch.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const THREAD_SOURCE = 'src/kafka/kafkajs-producer-thread.ts';

/** Paths of the built entry points. */
export interface BenchBuild {
  readonly dir: string;
  readonly tributaryCli: string;
  readonly fileSource: string;
  readonly datagen: string;
  readonly kafkajsRaw: string;
  readonly librdkafkaRaw: string;
  /** bench/lib/synthetic-connector.ts: `SyntheticConnector`. */
  readonly syntheticSource: string;
}

/**
 * Builds the entry points (about a second) and returns their paths.
 *
 * @param tributaryRoot Where Tributary's src/ and examples/ are taken from: this repository by
 *   default; another checkout (with its own tsconfig.json) to compare a change against this one.
 */
export async function buildBench(tributaryRoot: string = ROOT): Promise<BenchBuild> {
  const dir = join(WORK_DIR, 'build');
  // Wiped first: nothing of an earlier run's build is used.
  await rm(dir, { recursive: true, force: true });
  await build({
    config: false,
    entry: {
      'tributary-cli': join(tributaryRoot, 'src/cli/main.ts'),
      // The kafkajs sender's producer thread, loaded from beside the CLI (absent in older checkouts).
      ...(existsSync(join(tributaryRoot, THREAD_SOURCE))
        ? { 'kafkajs-producer-thread': join(tributaryRoot, THREAD_SOURCE) }
        : {}),
      'file-source': join(tributaryRoot, 'examples/file-source/src/index.ts'),
      datagen: join(tributaryRoot, 'examples/datagen/src/index.ts'),
      'kafkajs-raw-producer': join(ROOT, 'bench/contenders/kafkajs-raw-producer.ts'),
      'librdkafka-raw-producer': join(ROOT, 'bench/contenders/librdkafka-raw-producer.ts'),
      'synthetic-source': join(ROOT, 'bench/lib/synthetic-connector.ts'),
    },
    outDir: dir,
    format: ['esm'],
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    splitting: false,
    dts: false,
    silent: true,
  });
  return {
    dir,
    tributaryCli: join(dir, 'tributary-cli.js'),
    fileSource: join(dir, 'file-source.js'),
    datagen: join(dir, 'datagen.js'),
    kafkajsRaw: join(dir, 'kafkajs-raw-producer.js'),
    librdkafkaRaw: join(dir, 'librdkafka-raw-producer.js'),
    syntheticSource: join(dir, 'synthetic-source.js'),
  };
}
