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
  /** Run the Node contenders on a copy of kafkajs with two performance fixes (see bench/lib/kafkajs-patch.ts). */
  readonly patchedKafkajs: boolean;
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
}

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

const USAGE = `Usage: npx tsx bench/run.ts [options]
  --records=N            lines in the input file, one record each (default 1000000)
  --line-bytes=N         bytes per line, newline excluded (default 100)
  --runs=N               runs of each contender, medians reported (default 3)
  --only=a,b             some of connect,tributary,librdkafka,eos,kafkajs,perf (default all;
                         librdkafka = Tributary with sender=librdkafka, when installed;
                         eos = Tributary with exactly.once.source.support=enabled, both senders)
  --out=DIR              where <date>.md/.svg/.json go (default bench/results)
  --heartbeat-seconds=N  heartbeat timing run under load; 0 skips it (default 30)
  --profile              also profile one Tributary run (node --cpu-prof) and summarise it
  --verify / --no-verify read every record back and compare with its line (default: on up to 100000 records)
  --bootstrap=H:P        use this broker instead of starting one
  --connect-xmx=SIZE     also run Kafka Connect with -Xmx SIZE (default 512M; 'none' skips it)
  --tributary-from=DIR   build Tributary (src/, examples/) from another checkout, e.g. a copy with a change
  --tributary-set=K=V,.. extra worker properties for Tributary's runs, e.g. task.max.in.flight.records=5000
  --patched-kafkajs      Tributary and raw kafkajs on a copy of kafkajs with two CPU fixes (bench/lib/kafkajs-patch.ts)
  --node-options="..."   extra node options for Tributary and raw kafkajs, e.g. "--max-semi-space-size=64 --trace-gc"
  --wait-for-load=S      wait up to S seconds for the load average to drop below --max-load (default 120)
  --max-load=X           (default 1.5)
  --flush-interval-ms=N  offset.flush.interval.ms of both workers (default 10000)
  --source-batch=N       file source batch.size, lines per poll, both workers (default 2000)
  --connect-batch-size=N Kafka Connect producer batch.size in bytes (default 16384, the Java default)
  --batch-bytes=N        Tributary/raw kafkajs bytes per request (default 524288)
  --batch-records=N      Tributary/raw kafkajs records per request (default 1000)
  --linger-ms=N          linger.ms everywhere (default 5)`;

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
    'patched-kafkajs',
    'wait-for-load',
    'max-load',
    'flush-interval-ms',
    'source-batch',
    'connect-batch-size',
    'batch-bytes',
    'batch-records',
    'linger-ms',
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
  const only = new Set((flags.get('only') ?? 'connect,tributary,librdkafka,eos,kafkajs,perf').split(',').map((s) => s.trim()));
  for (const id of only) {
    if (!['connect', 'tributary', 'librdkafka', 'eos', 'kafkajs', 'perf'].includes(id))
      throw new SetupError(`--only: unknown contender '${id}'\n${USAGE}`);
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
    patchedKafkajs: flags.get('patched-kafkajs') === 'true',
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
