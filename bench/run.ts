/**
 * Tributary beside Apache Kafka Connect, the raw kafkajs producer and Kafka's ProducerPerformance,
 * on one local broker and one input file, in one command:
 *
 *   npx tsx bench/run.ts                                   # 1,000,000 lines, 3 runs each, heartbeat run
 *   npx tsx bench/run.ts --records=5000000 --runs=1 --series=all --seconds=30   # the full set (docs/benchmarks.md)
 *   npx tsx bench/run.ts --no-main --series=partitions --seconds=5 --only=tributary  # one series, short
 *   npx tsx bench/run.ts --records=10000 --runs=1 --heartbeat-seconds=5 --out=/tmp/bench   # CI-sized
 *   npx tsx bench/run.ts --only=tributary,kafkajs --runs=1 --profile --heartbeat-seconds=0 # profile
 *
 * Needs Java 17+ and Maven (Kafka's and Kafka Connect's jars come from Maven Central; see
 * bench/connect/fetch.ts and test/kafka/broker.ts). Writes <out>/<date>.md, .svg and .json
 * (out defaults to bench/results) and prints the table. `--help` lists the options; the method
 * is described in bench/lib/measure-run.ts and in the written report.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
// kafkajs as Tributary loads it (its read_committed filter too: the harness reads transactional topics back).
import { Kafka, logLevel } from '../src/kafka/kafkajs-fixes.js';
import { KAFKA_VERSION, type KafkaBroker, startBroker } from '../test/kafka/broker.js';
import { checkJava, ensureConnectJars, WORK_DIR } from './connect/fetch.js';
import type { Contender } from './contenders/contender.js';
import { kafkaConnect, kafkaConnectExactlyOnce } from './contenders/kafka-connect.js';
import { kafkajsRaw } from './contenders/kafkajs-raw.js';
import { librdkafkaRaw } from './contenders/librdkafka-raw.js';
import { producerPerformance } from './contenders/producer-perf.js';
import { tributary } from './contenders/tributary.js';

const librdkafkaInstalled: () => boolean = (() => {
  let installed: boolean | undefined;
  return () => {
    if (installed === undefined) {
      try {
        createRequire(import.meta.url)('@confluentinc/kafka-javascript');
        installed = true;
      } catch {
        console.log('sender=librdkafka and raw librdkafka skipped: @confluentinc/kafka-javascript is not installed');
        installed = false;
      }
    }
    return installed;
  };
})();

import { buildBench } from './lib/build.js';
import { svgChart } from './lib/chart.js';
import { profileMarkdown } from './lib/cpu-profile.js';
import { type HeartbeatResult, heartbeatRun } from './lib/heartbeat-run.js';
import { ensureInputFile } from './lib/input-file.js';
import { measureRun, type RunEnvironment, type RunResult } from './lib/measure-run.js';
import { loadAverage } from './lib/proc.js';
import { type ProfiledRun, profileRuns, threadName } from './lib/profile-run.js';
import { heartbeatTable, markdownReport, ratiosTable, runsTable, summaryTable } from './lib/report.js';
import { runSeries, type SeriesResult } from './lib/series.js';
import { heartbeatChart, seriesChart, seriesMarkdown } from './lib/series-report.js';
import { type BenchSettings, parseSettings } from './lib/settings.js';
import { SetupError } from './lib/setup-error.js';
import { summarise } from './lib/summary.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const say = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

function kafkajsVersion(): string {
  const require = createRequire(import.meta.url);
  return (require('kafkajs/package.json') as { version: string }).version;
}

/** The commit the sources are at, with "+ local changes" when src/ or examples/ differ from it. */
function gitRevision(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', 'src', 'examples'], { cwd: ROOT, encoding: 'utf8' }).trim();
    return dirty === '' ? head : `${head} + local changes`;
  } catch {
    return 'unknown';
  }
}

/** Waits until the 1-minute load average is below `max`, at most `seconds`. */
async function waitForQuiet(settings: BenchSettings): Promise<void> {
  const deadline = Date.now() + settings.waitForLoadSeconds * 1000;
  let announced = false;
  for (;;) {
    const load = loadAverage();
    if (load < settings.maxLoad) return;
    if (Date.now() >= deadline) {
      say(
        `load average still ${load.toFixed(2)} (≥ ${settings.maxLoad}); measuring anyway, the load is recorded beside each run`,
      );
      return;
    }
    if (!announced)
      say(`load average ${load.toFixed(2)} ≥ ${settings.maxLoad}: waiting up to ${settings.waitForLoadSeconds} s for it to drop`);
    announced = true;
    await new Promise((r) => setTimeout(r, 5000));
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  const settings = parseSettings(process.argv.slice(2), join(ROOT, 'bench', 'results'));
  const loadAtStart = loadavg();
  const date = new Date().toISOString().slice(0, 10);
  const revision = gitRevision();

  const javaSides = settings.only.has('connect') || settings.only.has('perf');
  const needJava =
    (settings.main && javaSides) ||
    (settings.series.has('sizes') && javaSides) ||
    (settings.series.has('tasks') && settings.only.has('connect')) ||
    settings.series.has('rss');
  const java = needJava ? await checkJava() : undefined;
  const connectJars = needJava ? await ensureConnectJars() : undefined;
  say(
    `building Tributary${settings.tributaryFrom === undefined ? '' : ` from ${settings.tributaryFrom}`}, the connectors and the raw producer into bench/.work/build ...`,
  );
  const built = await buildBench(settings.tributaryFrom === undefined ? undefined : resolve(settings.tributaryFrom));
  if (settings.main) say(`input: ${settings.records.toLocaleString('en-US')} lines of ${settings.lineBytes} B ...`);
  const inputFile = settings.main
    ? await ensureInputFile(join(WORK_DIR, 'input'), settings.records, settings.lineBytes)
    : '/dev/null';
  const inputBytes = settings.main ? (await stat(inputFile)).size : 0;
  const runsDir = join(WORK_DIR, 'runs', new Date().toISOString().replaceAll(':', '-').slice(0, 19));
  await rm(join(WORK_DIR, 'runs'), { recursive: true, force: true });
  await mkdir(runsDir, { recursive: true });

  const contenders: Contender[] = [];
  if (settings.main && connectJars !== undefined && java !== undefined && settings.only.has('connect')) {
    contenders.push(kafkaConnect(settings, java.java, connectJars.libs, connectJars.version));
    if (settings.connectXmx !== '') {
      contenders.push(kafkaConnect(settings, java.java, connectJars.libs, connectJars.version, settings.connectXmx));
    }
    if (settings.only.has('eos'))
      contenders.push(kafkaConnectExactlyOnce(settings, java.java, connectJars.libs, connectJars.version));
  }
  if (settings.main && settings.only.has('tributary'))
    contenders.push(tributary(settings, built.tributaryCli, built.fileSource, settings.nodeOptions));
  // The opt-in librdkafka sender, when its optional package is installed.
  if (settings.main && settings.only.has('librdkafka') && librdkafkaInstalled())
    contenders.push(tributary(settings, built.tributaryCli, built.fileSource, settings.nodeOptions, true));
  // Exactly-once (KIP-618) beside at-least-once, for both senders: the cost is the ratio in one run.
  if (settings.main && settings.only.has('eos')) {
    contenders.push(tributary(settings, built.tributaryCli, built.fileSource, settings.nodeOptions, false, true));
    if (librdkafkaInstalled())
      contenders.push(tributary(settings, built.tributaryCli, built.fileSource, settings.nodeOptions, true, true));
  }
  if (settings.main && settings.only.has('kafkajs'))
    contenders.push(kafkajsRaw(settings, built.kafkajsRaw, settings.nodeOptions));
  if (settings.main && settings.only.has('kafkajs-published'))
    contenders.push(kafkajsRaw(settings, built.kafkajsRaw, settings.nodeOptions, 'published'));
  if (settings.main && settings.only.has('librdkafka-raw') && librdkafkaInstalled())
    contenders.push(librdkafkaRaw(settings, built.librdkafkaRaw, settings.nodeOptions));
  if (settings.main && connectJars !== undefined && java !== undefined && settings.only.has('perf')) {
    contenders.push(
      producerPerformance(settings, java.java, connectJars.libs, connectJars.version, settings.producer.tributaryBatchBytes),
    );
  }

  let broker: KafkaBroker | undefined;
  let bootstrap = settings.bootstrap;
  if (bootstrap === undefined) {
    say('starting a Kafka broker (test/kafka/broker.ts) ...');
    broker = await startBroker({
      heapMb: 1024,
      // Deleted topics' files go at once, not a minute later in the middle of another run.
      serverProperties: { 'log.segment.delete.delay.ms': '1000' },
    });
    bootstrap = broker.bootstrapServers;
    ownBroker = broker;
  }
  const kafka = new Kafka({ clientId: 'bench-harness', brokers: bootstrap.split(','), logLevel: logLevel.NOTHING });
  const env: RunEnvironment = {
    kafka,
    bootstrap,
    brokerPid: broker?.pid,
    inputFile,
    inputBytes,
    records: settings.records,
    lineBytes: settings.lineBytes,
    verify: settings.verify,
    runsDir,
  };

  const results: RunResult[] = [];
  let loadAtMeasureStart = loadavg();
  let heartbeat: HeartbeatResult | undefined;
  let profiled: ProfiledRun[] = [];
  let series: SeriesResult[] = [];
  try {
    await waitForQuiet(settings);
    loadAtMeasureStart = loadavg();
    if (contenders.length > 0)
      say(
        `${settings.records.toLocaleString('en-US')} records of ${settings.lineBytes} B, ${settings.runs} run(s) each: ` +
          `${contenders.map((c) => c.label).join(', ')}; broker ${bootstrap}; load ${loadAverage().toFixed(2)}`,
      );
    for (let run = 1; run <= settings.runs; run++) {
      // A different order each round, so no side always follows the same one.
      const order = contenders.map((_, i) => contenders[(i + run - 1) % contenders.length] as Contender);
      for (const contender of order) {
        const r = await measureRun(contender, run, env);
        results.push(r);
        say(
          `  run ${run} ${r.label.padEnd(30)} ${r.wallS.toFixed(2).padStart(7)} s  ${Math.round(r.recordsPerSec).toLocaleString('en-US').padStart(9)} rec/s  ` +
            `CPU ${r.cpuS.toFixed(2).padStart(6)} s (main ${r.threadCpu.mainS.toFixed(2)}, busiest other thread ${r.threadCpu.busiestOtherS.toFixed(2)}, rest ${r.threadCpu.restS.toFixed(2)})  ` +
            `RSS ${r.peakRssMiB.toFixed(0).padStart(5)} MiB  first ${r.firstRecordS?.toFixed(2) ?? '-'} s  ` +
            `load ${r.loadBefore.toFixed(2)}  ${r.ok ? 'ok' : `FAILED: ${r.problems.join('; ')} (log: ${relative(ROOT, r.logFile)})`}`,
        );
      }
    }
    if (settings.main && settings.heartbeatSeconds > 0 && settings.only.has('tributary')) {
      say(`heartbeat timing: Tributary + datagen at full speed for ${settings.heartbeatSeconds} s ...`);
      heartbeat = await heartbeatRun(settings, env, built.tributaryCli, built.datagen);
    }
    if (settings.main && settings.profile) {
      say('profiling one run of Tributary and of raw kafkajs (node --cpu-prof) ...');
      profiled = await profileRuns(settings, env, built);
    }
    if (settings.series.size > 0) {
      series = await runSeries({
        settings,
        env: { kafka, bootstrap, brokerPid: broker?.pid, verify: false, runsDir },
        built,
        java:
          java !== undefined && connectJars !== undefined
            ? { java: java.java, libs: connectJars.libs, version: connectJars.version }
            : undefined,
        librdkafka: librdkafkaInstalled(),
        say,
      });
    }
  } finally {
    await broker?.destroy();
  }

  const summaries = summarise(results, settings.records);
  const durationS = (performance.now() - started) / 1000;
  const chartFile = `${date}.svg`;
  const command = `npx tsx bench/run.ts${process.argv.length > 2 ? ` ${process.argv.slice(2).join(' ')}` : ''}`;
  const cpu = cpus();
  const meta = {
    date,
    command,
    machine: `${cpu.length} × ${cpu[0]?.model ?? 'CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB RAM, Linux ${release()}`,
    node: `Node ${process.version}`,
    java: java?.version ?? 'Java not used',
    brokerVersion: settings.bootstrap === undefined ? KAFKA_VERSION : 'external',
    connectVersion: connectJars?.version ?? 'not run',
    records: settings.records,
    lineBytes: settings.lineBytes,
    runs: settings.runs,
    loadAtStart,
    loadAtMeasureStart,
    loadAtEnd: loadavg(),
    revision,
    durationS,
    chartFile: summaries.length > 0 ? chartFile : undefined,
    flushIntervalMs: settings.flushIntervalMs,
    tributaryFrom: settings.tributaryFrom,
    kafkajs: `${kafkajsVersion()}; raw kafkajs with the fixes of src/kafka/kafkajs-fixes.ts, raw kafkajs 2.2.4 as published without; Tributary ${settings.tributaryFrom === undefined ? 'with them' : `as its checkout (${settings.tributaryFrom}) loads kafkajs`}`,
  };
  const charts = {
    heartbeat: heartbeat === undefined ? undefined : `${date}-heartbeat.svg`,
    series: Object.fromEntries(series.map((s) => [s.id, `${date}-${s.id}.svg`])),
  };
  let report = markdownReport(meta, contenders, summaries, results, heartbeat, series, charts);
  if (profiled.length > 0) {
    report += '\n## CPU profiles (node --cpu-prof, one run each, not in the table)\n';
    for (const p of profiled) {
      report += `\n### ${p.result.label}: ${p.result.wallS.toFixed(2)} s, ${Math.round(p.result.recordsPerSec).toLocaleString('en-US')} records/s while profiled\n\n`;
      for (const t of p.threads) {
        report += `Profile of ${threadName(t.threadId)}: \`${relative(ROOT, t.profileFile)}\`\n\n${profileMarkdown(t.summary, threadName(t.threadId))}\n`;
      }
    }
  }
  await mkdir(settings.out, { recursive: true });
  await writeFile(join(settings.out, `${date}.md`), report);
  if (summaries.length > 0) {
    await writeFile(
      join(settings.out, chartFile),
      svgChart(
        summaries,
        `File source to Kafka: ${settings.records.toLocaleString('en-US')} records of ${settings.lineBytes} B, medians of ${settings.runs} run(s), ${date}`,
      ),
    );
  }
  if (heartbeat !== undefined) await writeFile(join(settings.out, charts.heartbeat as string), heartbeatChart(heartbeat, date));
  for (const s of series) await writeFile(join(settings.out, charts.series[s.id] as string), seriesChart(s, date));
  // RSS samples are kept only for the slow-broker runs (the rest would make the file megabytes long).
  const lean = (r: RunResult) => ({ ...r, rssSamples: undefined });
  await writeFile(
    join(settings.out, `${date}.json`),
    `${JSON.stringify(
      {
        meta,
        settings: { ...settings, only: [...settings.only], series: [...settings.series] },
        summaries,
        results: results.map(lean),
        heartbeat,
        series: series.map((s) => ({
          ...s,
          points: s.points.map((p) => ({ ...p, result: lean(p.result) })),
          slow: s.slow?.map((w) => ({
            ...w,
            result: { ...w.result, rssSamples: w.result.rssSamples.filter((_, i) => i % 10 === 0) },
          })),
        })),
        profiles: profiled.map((p) => ({
          result: p.result,
          threads: p.threads.map((t) => ({ threadId: t.threadId, summary: t.summary })),
        })),
      },
      null,
      2,
    )}\n`,
  );

  if (summaries.length > 0) process.stdout.write(`\n${summaryTable(summaries)}\n\n${ratiosTable(summaries)}\n\n`);
  for (const s of series) process.stdout.write(`${seriesMarkdown(s, undefined)}\n`);
  if (heartbeat !== undefined) {
    process.stdout.write(
      `Heartbeats (interval 1000 ms, under ${Math.round(heartbeat.dataPerSec).toLocaleString('en-US')} records/s):\n${heartbeatTable(heartbeat)}\n\n`,
    );
  }
  for (const p of profiled) {
    for (const t of p.threads) {
      process.stdout.write(
        `${p.result.label} profile of ${threadName(t.threadId)} (${relative(ROOT, t.profileFile)}):\n${profileMarkdown(t.summary, threadName(t.threadId))}\n`,
      );
    }
  }
  if (results.some((r) => !r.ok)) process.stdout.write(`${runsTable(results.filter((r) => !r.ok))}\n\n`);
  process.stdout.write(
    `load average start ${loadAtStart.map((l) => l.toFixed(2)).join(' ')}, end ${meta.loadAtEnd.map((l) => l.toFixed(2)).join(' ')}; ` +
      `took ${Math.round(durationS)} s; wrote ${relative(process.cwd(), join(settings.out, `${date}.md`))}\n`,
  );
  const failed =
    results.filter((r) => !r.ok).length +
    (heartbeat?.problems.length ?? 0) +
    series.flatMap((s) => [...s.points.map((p) => p.result), ...(s.slow ?? []).map((w) => w.result)]).filter((r) => !r.ok).length;
  if (failed > 0) process.exitCode = 1;
}

/** The broker this run started, for the signal handler. */
let ownBroker: KafkaBroker | undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  // Stop the broker and remove its data (at most 10 s), then exit through process.exit so the
  // exit hooks kill any measured process and the broker if it is still there.
  process.on(signal, () => {
    const stopping = ownBroker?.destroy() ?? Promise.resolve();
    const timer = setTimeout(() => process.exit(130), 10_000);
    void stopping.finally(() => {
      clearTimeout(timer);
      process.exit(130);
    });
  });
}
// A closed stderr (e.g. piped to `head`) must not kill the run halfway with its broker up.
process.stderr.on('error', () => {});
process.stdout.on('error', () => {});

// A step awaiting something that can no longer happen (nothing left to wake it) would otherwise
// let Node exit with status 0 and no results: say so and fail instead.
let finished = false;
process.once('beforeExit', () => {
  if (finished) return;
  process.stderr.write(
    'bench: stopped before finishing (the event loop emptied while a step was still waiting; the last line above is where)\n',
  );
  process.exitCode = 1;
});

main()
  .then(() => {
    finished = true;
  })
  .catch((e: unknown) => {
    const text = e instanceof SetupError ? e.message : e instanceof Error ? (e.stack ?? e.message) : String(e);
    process.stderr.write(`bench: ${text}\n`);
    process.exit(1);
  });
