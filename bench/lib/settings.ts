/**
 * The workload and the settings every side shares, resolved once from the command line.
 *
 * Producer semantics are Kafka Connect's source-task producer defaults, set explicitly on every
 * side: acks=all, one request in flight, idempotence off, no compression, linger 5 ms (Kafka 4's
 * default). Batching is each side's own unless overridden: Kafka Connect's Java producer fills
 * `batch.size` bytes per partition (16 KiB by default) and pipelines nothing with one in flight;
 * Tributary's sender (and the raw kafkajs loop, which copies it) sends requests of up to
 * 1000 records / 512 KiB, because kafkajs has no accumulator and each request is one `sendBatch`.
 */

import { SetupError } from './setup-error.js';

/** Options of one harness run. */
export interface BenchSettings {
  /** Lines in the input file (= records per run). */
  readonly records: number;
  /** Bytes of each line, newline excluded (= value bytes of each record). */
  readonly lineBytes: number;
  /** Runs of each contender; figures are medians. */
  readonly runs: number;
  /** Which contenders run. */
  readonly only: ReadonlySet<string>;
  /** Where results go (bench/results by default). */
  readonly out: string;
  /** Seconds of the heartbeat timing run; 0 skips it. */
  readonly heartbeatSeconds: number;
  /** Also run Tributary once with `node --cpu-prof` and summarise the profile. */
  readonly profile: boolean;
  /** Consume every topic after its run and compare each value with its line (default: for ≤ 100k records). */
  readonly verify: boolean;
  /** Build Tributary and its example connectors from this checkout instead of this repository (A/B of a change). */
  readonly tributaryFrom: string | undefined;
  /** Extra worker properties for Tributary's runs (A/B of a setting), e.g. `task.max.in.flight.records=5000`. */
  readonly tributarySet: Readonly<Record<string, string>>;
  /** Extra `node` options for the Node contenders (Tributary and raw kafkajs), e.g. `--max-semi-space-size=64`. */
  readonly nodeOptions: readonly string[];
  /** `-Xmx` of a second Kafka Connect contender with a smaller heap ('' = none). */
  readonly connectXmx: string;
  /** An existing broker to use instead of starting one. */
  readonly bootstrap: string | undefined;
  /** Wait (up to this many seconds) for the 1-minute load average to fall below `maxLoad` before measuring. */
  readonly waitForLoadSeconds: number;
  readonly maxLoad: number;
  /** `offset.flush.interval.ms` of both workers. */
  readonly flushIntervalMs: number;
  /** File source `batch.size` (lines per poll) of both workers; FileStreamSource's default. */
  readonly sourceBatchLines: number;
  readonly producer: ProducerSettings;
  /** Run the main table (off with `--no-main`, to run series alone). */
  readonly main: boolean;
  /** Which series run after the main table (bench/lib/series.ts); empty by default. */
  readonly series: ReadonlySet<SeriesId>;
  /** Seconds each series point runs after its first record (or less, when its input runs out). */
  readonly seconds: number;
  /** Source partitions per task in the partitions series. */
  readonly partitionCounts: readonly number[];
  /** Record sizes in bytes in the sizes series. */
  readonly sizes: readonly number[];
  /** Tasks (= topic partitions) in the tasks series. */
  readonly taskCounts: readonly number[];
  /** Records of the two complete runs of the rss series (flat in the number of records). */
  readonly rssRecords: readonly number[];
  /** `producer_byte_rate` quota of the slow-broker run of the rss series, bytes/s. */
  readonly slowBrokerBytesPerSec: number;
}

/** The series `--series` can select. */
export const SERIES_IDS = ['partitions', 'sizes', 'tasks', 'rss'] as const;
export type SeriesId = (typeof SERIES_IDS)[number];

/** Producer settings; the first five are the same on every side. */
export interface ProducerSettings {
  readonly acks: 'all';
  readonly maxInFlight: number;
  readonly idempotence: boolean;
  readonly compression: 'none';
  readonly lingerMs: number;
  /** Kafka Connect (Java producer) `batch.size`: bytes per partition batch. */
  readonly connectBatchBytes: number;
  /** Tributary `batch.size` (and raw kafkajs): value bytes per request. */
  readonly tributaryBatchBytes: number;
  /** Tributary `batch.max.records` (and raw kafkajs): records per request. */
  readonly tributaryBatchRecords: number;
}

/** What `--only` takes, and runs when it is not given. */
const ONLY_IDS = ['connect', 'tributary', 'librdkafka', 'eos', 'kafkajs', 'kafkajs-published', 'librdkafka-raw', 'perf'] as const;

const USAGE = `Usage: npx tsx bench/run.ts [options]
  --records=N            lines in the input file, one record each (default 1000000)
  --line-bytes=N         bytes per line, newline excluded (default 100)
  --runs=N               runs of each contender, medians reported (default 3)
  --only=a,b             some of connect,tributary,librdkafka,eos,kafkajs,kafkajs-published,librdkafka-raw,perf
                         (default all; kafkajs = raw kafkajs with Tributary's kafkajs fixes, kafkajs-published
                         = without them; librdkafka = Tributary with sender=librdkafka, when installed;
                         librdkafka-raw = @confluentinc/kafka-javascript's producer alone;
                         eos = Tributary with exactly.once.source.support=enabled, both senders)
  --out=DIR              where <date>.md/.svg/.json go (default bench/results)
  --heartbeat-seconds=N  heartbeat timing run under load; 0 skips it (default 30)
  --profile              also profile one Tributary run (node --cpu-prof) and summarise it
  --verify / --no-verify read every record back and compare with its line (default: on up to 100000 records)
  --bootstrap=H:P        use this broker instead of starting one
  --connect-xmx=SIZE     also run Kafka Connect with -Xmx SIZE (default 512M; 'none' skips it)
  --tributary-from=DIR   build Tributary (src/, examples/) from another checkout, e.g. a copy with a change
  --tributary-set=K=V,.. extra worker properties for Tributary's runs, e.g. task.max.in.flight.records=5000
  --node-options="..."   extra node options for Tributary and raw kafkajs, e.g. "--max-semi-space-size=64 --trace-gc"
  --wait-for-load=S      wait up to S seconds for the load average to drop below --max-load (default 120)
  --max-load=X           (default 1.5)
  --flush-interval-ms=N  offset.flush.interval.ms of both workers (default 10000)
  --source-batch=N       file source batch.size, lines per poll, both workers (default 2000)
  --connect-batch-size=N Kafka Connect producer batch.size in bytes (default 16384, the Java default)
  --batch-bytes=N        Tributary/raw kafkajs bytes per request (default 524288)
  --batch-records=N      Tributary/raw kafkajs records per request (default 1000)
  --linger-ms=N          linger.ms everywhere (default 5)
Steady state and series:
  --no-main              skip the main table (run only the series)
  --series=a,b|all       series after the main table: partitions,sizes,tasks,rss (default none)
  --seconds=S            how long each series point runs after its first record (default 30)
  --partition-counts=..  source partitions per task, partitions series (default 1,100,10000,100000)
  --sizes=..             record sizes in bytes, sizes series (default 100,1024,10240)
  --task-counts=..       tasks = topic partitions, tasks series (default 1,2,4)
  --rss-records=..       records of the complete runs of the rss series (default 1000000,5000000)
  --slow-broker-bytes=N  producer_byte_rate quota of the rss series' slow-broker run (default 262144)`;

/** Parses `--name=value` flags; throws with the usage text on anything unknown or malformed. */
export function parseSettings(argv: readonly string[], defaultOut: string): BenchSettings {
  const flags = new Map<string, string>();
  for (const arg of argv) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (m === null) throw new SetupError(`Unexpected argument '${arg}'\n${USAGE}`);
    flags.set(m[1] as string, m[2] ?? 'true');
  }
  const known = new Set([
    'records',
    'line-bytes',
    'runs',
    'only',
    'out',
    'heartbeat-seconds',
    'profile',
    'verify',
    'no-verify',
    'bootstrap',
    'connect-xmx',
    'tributary-from',
    'tributary-set',
    'node-options',
    'wait-for-load',
    'max-load',
    'flush-interval-ms',
    'source-batch',
    'connect-batch-size',
    'batch-bytes',
    'batch-records',
    'linger-ms',
    'no-main',
    'series',
    'seconds',
    'partition-counts',
    'sizes',
    'task-counts',
    'rss-records',
    'slow-broker-bytes',
    'help',
  ]);
  for (const k of flags.keys()) if (!known.has(k)) throw new SetupError(`Unknown option --${k}\n${USAGE}`);
  if (flags.has('help')) throw new SetupError(USAGE);
  const int = (name: string, fallback: number, min = 1): number => {
    const v = flags.get(name);
    if (v === undefined) return fallback;
    const n = Number(v.replaceAll('_', ''));
    if (!Number.isInteger(n) || n < min) throw new SetupError(`--${name} must be an integer ≥ ${min}, got '${v}'\n${USAGE}`);
    return n;
  };
  const records = int('records', 1_000_000);
  const given = flags.get('only');
  const only = new Set(given === undefined ? ONLY_IDS : given.split(',').map((s) => s.trim()));
  for (const id of only) {
    if (!(ONLY_IDS as readonly string[]).includes(id)) throw new SetupError(`--only: unknown contender '${id}'\n${USAGE}`);
  }
  const list = (name: string, fallback: readonly number[], min = 1): number[] => {
    const v = flags.get(name);
    if (v === undefined) return [...fallback];
    const xs = v.split(',').map((x) => Number(x.trim().replaceAll('_', '')));
    if (xs.length === 0 || xs.some((n) => !Number.isInteger(n) || n < min))
      throw new SetupError(`--${name} must be a comma-separated list of integers ≥ ${min}, got '${v}'\n${USAGE}`);
    return xs;
  };
  const seriesFlag = flags.get('series') ?? '';
  const series = new Set<SeriesId>();
  for (const id of seriesFlag === 'all' ? SERIES_IDS : seriesFlag.split(',').map((x) => x.trim())) {
    if (id === '') continue;
    if (!(SERIES_IDS as readonly string[]).includes(id))
      throw new SetupError(`--series: unknown series '${id}' (known: ${SERIES_IDS.join(', ')}, or all)\n${USAGE}`);
    series.add(id as SeriesId);
  }
  const maxLoad = Number(flags.get('max-load') ?? '1.5');
  if (!(maxLoad > 0)) throw new SetupError(`--max-load must be a positive number\n${USAGE}`);
  return {
    records,
    lineBytes: int('line-bytes', 100, 20),
    runs: int('runs', 3),
    only,
    out: flags.get('out') ?? defaultOut,
    heartbeatSeconds: int('heartbeat-seconds', 30, 0),
    profile: flags.get('profile') === 'true',
    verify: flags.has('no-verify') ? false : flags.has('verify') ? flags.get('verify') !== 'false' : records <= 100_000,
    bootstrap: flags.get('bootstrap'),
    tributaryFrom: flags.get('tributary-from'),
    nodeOptions: (flags.get('node-options') ?? '').split(' ').filter((o) => o !== ''),
    tributarySet: Object.fromEntries(
      (flags.get('tributary-set') ?? '')
        .split(',')
        .filter((kv) => kv.includes('='))
        .map((kv) => [kv.slice(0, kv.indexOf('=')).trim(), kv.slice(kv.indexOf('=') + 1).trim()]),
    ),
    connectXmx: flags.get('connect-xmx') === 'none' ? '' : (flags.get('connect-xmx') ?? '512M'),
    waitForLoadSeconds: int('wait-for-load', 120, 0),
    maxLoad,
    flushIntervalMs: int('flush-interval-ms', 10_000),
    sourceBatchLines: int('source-batch', 2000),
    main: !flags.has('no-main'),
    series,
    seconds: int('seconds', 30),
    partitionCounts: list('partition-counts', [1, 100, 10_000, 100_000]),
    sizes: list('sizes', [100, 1024, 10_240], 20),
    taskCounts: list('task-counts', [1, 2, 4]),
    rssRecords: list('rss-records', [1_000_000, 5_000_000]),
    slowBrokerBytesPerSec: int('slow-broker-bytes', 256 * 1024, 1024),
    producer: {
      acks: 'all',
      maxInFlight: 1,
      idempotence: false,
      compression: 'none',
      lingerMs: int('linger-ms', 5, 0),
      connectBatchBytes: int('connect-batch-size', 16_384),
      tributaryBatchBytes: int('batch-bytes', 512 * 1024),
      tributaryBatchRecords: int('batch-records', 1000),
    },
  };
}
