/**
 * Chaos run of distributed mode: three `tributary distributed` workers run a datagen connector
 * (tasks.max=3, fixed rate) and the file source (one task, following a file a side process keeps
 * appending numbered lines to) while a random running worker is SIGKILLed every 20-40 s and
 * restarted 5-15 s later (seeded). At the end the writers stop, the cluster settles (every worker
 * up, every task RUNNING, the file read to its end), datagen is stopped (PUT /stop, a graceful
 * task stop with a last offset flush), the workers get SIGTERM, and the data topics are audited:
 *
 * - datagen: every seq 1..committed of each source partition must be in the topic;
 * - file: every line written (1..last) must be in the topic, and the committed position must be
 *   the file's size;
 * - missing (must be 0), duplicates (count and % of expected), records beyond the committed offsets;
 * - for each kill, the time from the SIGKILL to the first record in the data topic of each task
 *   that the killed worker ran, by the records' CreateTime timestamps (set by the worker's sender
 *   when it builds the message; every process is on this machine, one clock).
 *
 * Runs shorter than a minute scale the kill and restart intervals down by minutes (0.5 -> 10-20 s
 * and 2.5-7.5 s) so the small mode still kills.
 *
 *   npx tsx bench/chaos.ts [--minutes=4] [--seed=1] [--out=bench/results/<date>-chaos.md]
 *                          [--rate=100] [--line-rate=200]
 *
 * Uses KAFKA_BOOTSTRAP_SERVERS when set, else starts its own broker (test/kafka/broker.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Kafka, logLevel } from '../src/kafka/kafkajs-fixes.js';
import { TopicAdmin } from '../src/kafka/topic-admin.js';
import type { TopicRecord } from '../src/kafka/topic-reader.js';
import {
  type AuditResult,
  auditDatagen,
  auditLines,
  committedDatagenSeqs,
  committedOffsets,
  connectorStatus,
  readWholeTopic,
  tasksRunning,
} from '../test/helpers/distributed-audit.js';
import { type ClusterWorker, rest, TestCluster } from '../test/helpers/distributed-cluster.js';
import { type KafkaBroker, startBroker } from '../test/kafka/broker.js';

const DATAGEN = './examples/datagen/src/index.ts#DatagenConnector';
const FILE_SOURCE = './examples/file-source/src/index.ts#FileSourceConnector';
const GEN = 'chaos-gen';
const LINES = 'chaos-lines';
const GEN_TASKS = 3;

function arg(name: string, fallback: string): string {
  const prefix = `--${name}=`;
  const found = process.argv.slice(2).find((a) => a.startsWith(prefix));
  return found === undefined ? fallback : found.slice(prefix.length);
}

function numberArg(name: string, fallback: number): number {
  const raw = arg(name, String(fallback));
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name}=${raw}: expected a number >= 0`);
  return n;
}

const MINUTES = numberArg('minutes', 4);
const SEED = numberArg('seed', 1);
const RATE = numberArg('rate', 100);
const LINE_RATE = numberArg('line-rate', 200);
const OUT = arg('out', `bench/results/${new Date().toISOString().slice(0, 10)}-chaos.md`);
const RUN_MS = MINUTES * 60_000;
const SCALE = Math.min(1, MINUTES);

/** mulberry32: a small seeded generator, so a seed gives the same kill schedule. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = seeded(SEED);
const between = (lo: number, hi: number) => lo + random() * (hi - lo);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (msg: string) => console.error(`[chaos ${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`);
const t0 = Date.now();

/** A task the killed worker ran when it was killed. */
interface LostTask {
  connector: string;
  task: number;
}

interface Kill {
  at: number;
  worker: ClusterWorker;
  tasks: LostTask[];
  restartedAt?: number;
  /** When the restarted worker had joined the group again. */
  rejoinedAt?: number;
}

/** Appends `line N` lines to `file` at `rate` per second from a child process; resolves the last N on SIGTERM. */
function startLineWriter(file: string, rate: number): { child: ChildProcess; stop: () => Promise<number> } {
  const script = `
    const fs = require('node:fs');
    const fd = fs.openSync(${JSON.stringify(file)}, 'a');
    let n = 0; const started = Date.now();
    const timer = setInterval(() => {
      const due = Math.floor(((Date.now() - started) * ${rate}) / 1000);
      let text = '';
      while (n < due) { n++; text += 'line ' + n + '\\n'; }
      if (text !== '') fs.writeSync(fd, text);
    }, 20);
    process.on('SIGTERM', () => { clearInterval(timer); fs.closeSync(fd); process.stdout.write(String(n)); process.exit(0); });
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return {
    child,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
      return Number(out);
    },
  };
}

function running(cluster: TestCluster): ClusterWorker[] {
  return cluster.workers.filter((w) => w.running);
}

/** Status of both connectors from some running worker other than `not`. */
async function placement(cluster: TestCluster, not?: ClusterWorker): Promise<Map<string, string>> {
  const at = running(cluster).find((w) => w !== not);
  const where = new Map<string, string>();
  if (at === undefined) return where;
  for (const name of [GEN, LINES]) {
    const s = await connectorStatus(at.url, name).catch(() => undefined);
    for (const t of s?.tasks ?? []) if (t.state === 'RUNNING') where.set(`${name}/${t.id}`, t.worker_id);
  }
  return where;
}

function quantiles(values: number[]): { min: number; median: number; max: number } | undefined {
  if (values.length === 0) return undefined;
  const v = [...values].sort((a, b) => a - b);
  const mid = Math.floor(v.length / 2);
  const median = v.length % 2 === 1 ? (v[mid] as number) : ((v[mid - 1] as number) + (v[mid] as number)) / 2;
  return { min: v[0] as number, median, max: v[v.length - 1] as number };
}

const seconds = (ms: number | undefined) => (ms === undefined ? 'none' : (ms / 1000).toFixed(1));

/** Time of the first record of each task after `at`: `${connector}/${task}` -> timestamp. */
function firstAfter(
  at: number,
  gen: readonly TopicRecord[],
  lines: readonly TopicRecord[],
  tasks: LostTask[],
): Map<string, number> {
  const out = new Map<string, number>();
  for (const { connector, task } of tasks) {
    let first = Number.POSITIVE_INFINITY;
    if (connector === GEN) {
      for (const r of gen) {
        if (r.timestamp <= at || r.timestamp >= first) continue;
        if ((JSON.parse(String(r.value)) as { task: number }).task === task) first = r.timestamp;
      }
    } else {
      // The file source has one task: every line record is task 0's.
      for (const r of lines) if (r.timestamp > at && r.timestamp < first) first = r.timestamp;
    }
    if (first !== Number.POSITIVE_INFINITY) out.set(`${connector}/${task}`, first);
  }
  return out;
}

async function main(): Promise<void> {
  let broker: KafkaBroker | undefined;
  let bootstrap = process.env.KAFKA_BOOTSTRAP_SERVERS;
  if (bootstrap === undefined || bootstrap === '') {
    log('starting a broker');
    broker = await startBroker({ heapMb: 512 });
    bootstrap = broker.bootstrapServers;
  }
  const kafka = new Kafka({ clientId: 'tributary-chaos', brokers: bootstrap.split(','), logLevel: logLevel.NOTHING });
  const cluster = await TestCluster.create({ bootstrap, workers: 3 });
  const dir = await mkdtemp(join(tmpdir(), 'tributary-chaos-'));
  const file = join(dir, 'lines.txt');
  await writeFile(file, '');
  const genTopic = `${cluster.groupId}-gen`;
  const linesTopic = `${cluster.groupId}-lines`;
  const admin = new TopicAdmin(kafka);
  await admin.ensureTopics([genTopic], { partitions: 3 });
  // Lines have no key: one partition keeps them in file order.
  await admin.ensureTopics([linesTopic], { partitions: 1 });
  await admin.close();
  let writer: ReturnType<typeof startLineWriter> | undefined;
  try {
    log(`starting 3 workers (group ${cluster.groupId})`);
    await cluster.start();
    const [a] = cluster.workers as [ClusterWorker];
    const genConfig = {
      'connector.class': DATAGEN,
      topic: genTopic,
      'tasks.max': String(GEN_TASKS),
      rate: String(RATE),
      partitions: '2',
    };
    const linesConfig = { 'connector.class': FILE_SOURCE, file, topic: linesTopic, 'poll.interval.ms': '250' };
    for (const [name, config] of [
      [GEN, genConfig],
      [LINES, linesConfig],
    ] as const) {
      const created = await rest(a.url, 'POST', '/connectors', { name, config });
      if (created.status !== 201) throw new Error(`creating ${name}: ${created.status} ${JSON.stringify(created.body)}`);
    }
    writer = startLineWriter(file, LINE_RATE);
    await tasksRunning(a.url, GEN, GEN_TASKS);
    await tasksRunning(a.url, LINES, 1);
    log(
      `running: datagen ${GEN_TASKS} tasks x ${RATE}/s, file source ${LINE_RATE} lines/s; chaos for ${MINUTES} min, seed ${SEED}`,
    );

    const kills: Kill[] = [];
    const restarts: Promise<void>[] = [];
    const chaosEnd = Date.now() + RUN_MS;
    for (;;) {
      const wait = between(20_000, 40_000) * SCALE;
      if (Date.now() + wait > chaosEnd) break;
      await sleep(wait);
      const candidates = running(cluster);
      if (candidates.length < 2) continue;
      const victim = candidates[Math.floor(random() * candidates.length)] as ClusterWorker;
      const where = await placement(cluster, victim);
      const tasks = [...where]
        .filter(([, worker]) => worker === victim.workerId)
        .map(([key]) => {
          const [connector, task] = key.split('/') as [string, string];
          return { connector, task: Number(task) };
        });
      const kill: Kill = { at: Date.now(), worker: victim, tasks };
      await victim.signal('SIGKILL');
      kills.push(kill);
      const downFor = between(5_000, 15_000) * SCALE;
      log(
        `SIGKILL worker ${victim.index} (${tasks.map((t) => `${t.connector}/${t.task}`).join(', ') || 'no tasks'}); restart in ${seconds(downFor)} s`,
      );
      restarts.push(
        (async () => {
          await sleep(downFor);
          kill.restartedAt = Date.now();
          await victim.start();
          kill.rejoinedAt = Date.now();
          log(`worker ${victim.index} rejoined`);
        })(),
      );
    }
    await sleep(Math.max(0, chaosEnd - Date.now()));
    await Promise.all(restarts);

    log('chaos over: stopping the line writer, letting the cluster settle');
    const lines = await writer.stop();
    writer = undefined;
    const size = (await readFile(file)).length;
    const settleStart = Date.now();
    await tasksRunning(a.url, GEN, GEN_TASKS, () => true, 120_000);
    await tasksRunning(a.url, LINES, 1, () => true, 120_000);
    const deadline = Date.now() + 120_000;
    for (;;) {
      const entries = await committedOffsets(kafka, cluster.topics.offsets, LINES);
      if (entries.length === 1 && Number(entries[0]?.offset.position) === size) break;
      if (Date.now() > deadline)
        throw new Error(`the file source did not commit position ${size} within 120 s: ${JSON.stringify(entries)}`);
      await sleep(500);
    }
    const settledMs = Date.now() - settleStart;
    const stopped = await rest(a.url, 'PUT', `/connectors/${GEN}/stop`);
    if (stopped.status >= 300) throw new Error(`PUT /connectors/${GEN}/stop: ${stopped.status} ${JSON.stringify(stopped.body)}`);
    for (const deadlineStop = Date.now() + 60_000; ; ) {
      const s = await connectorStatus(a.url, GEN);
      if (s?.connector.state === 'STOPPED' && s.tasks.length === 0) break;
      if (Date.now() > deadlineStop) throw new Error(`${GEN} not STOPPED within 60 s: ${JSON.stringify(s)}`);
      await sleep(250);
    }
    const exits: Array<number | null> = [];
    for (const w of cluster.workers) exits.push(await w.signal('SIGTERM'));
    log(`settled in ${seconds(settledMs)} s; workers stopped, exit codes ${exits.join(', ')}; auditing`);

    const genCommitted = await committedDatagenSeqs(kafka, cluster.topics.offsets, GEN);
    const genExpected = [...genCommitted.values()].reduce((x, y) => x + y, 0);
    const genRecords = await readWholeTopic(kafka, genTopic, genExpected, 120_000);
    const lineRecords = await readWholeTopic(kafka, linesTopic, lines, 120_000);
    const genAudit = auditDatagen(genRecords, genCommitted);
    const lineAudit = auditLines(lineRecords, lines);
    const linesEntries = await committedOffsets(kafka, cluster.topics.offsets, LINES);
    const position = Number(linesEntries[0]?.offset.position ?? 0);
    const content = await readFile(file);
    const committedLines = content.subarray(0, position).toString('utf8').split('\n').length - 1;

    const report = render({
      kills,
      genAudit,
      lineAudit,
      committedLines,
      linesWritten: lines,
      position,
      size,
      settledMs,
      exits,
      gen: genRecords,
      lines: lineRecords,
    });
    console.log(report);
    await mkdir(dirname(OUT), { recursive: true });
    await writeFile(OUT, `${report}\n`);
    const logs = join(dir, 'logs');
    await mkdir(logs, { recursive: true });
    for (const w of cluster.workers) await writeFile(join(logs, `worker-${w.index}.log`), w.log);
    log(`written to ${OUT}; worker logs in ${logs}`);
    if (genAudit.missing > 0 || lineAudit.missing > 0) {
      log('RECORDS MISSING');
      process.exitCode = 1;
    }
  } finally {
    if (writer !== undefined) await writer.stop();
    await cluster.destroy();
    await broker?.destroy();
  }
}

interface ReportInput {
  kills: Kill[];
  genAudit: AuditResult;
  lineAudit: AuditResult;
  committedLines: number;
  linesWritten: number;
  position: number;
  size: number;
  settledMs: number;
  exits: Array<number | null>;
  gen: readonly TopicRecord[];
  lines: readonly TopicRecord[];
}

function render(r: ReportInput): string {
  const pct = (n: number, of: number) => (of === 0 ? '-' : `${((100 * n) / of).toFixed(2)} %`);
  const out: string[] = [];
  out.push(`# Chaos run, distributed mode (${new Date().toISOString().slice(0, 19)}Z)`);
  out.push('');
  out.push(
    `3 workers (session.timeout.ms=4000, heartbeat.interval.ms=1000, scheduled.rebalance.max.delay.ms=8000, offset.flush.interval.ms=1000); ` +
      `datagen tasks.max=${GEN_TASKS}, 2 sequences each, ${RATE} records/s per task, 3 Kafka partitions; ` +
      `file source, 1 task, poll.interval.ms=250, a side process appending ${LINE_RATE} lines/s. ` +
      `${MINUTES} min of chaos, seed ${SEED}: SIGKILL a random running worker every ${20 * SCALE}-${40 * SCALE} s, restart it ${5 * SCALE}-${15 * SCALE} s later. ` +
      `${r.kills.length} kills. Settled ${seconds(r.settledMs)} s after the chaos; workers' exit codes on SIGTERM: ${r.exits.join(', ')}.`,
  );
  out.push('');
  out.push('| source | expected | in topic | missing | duplicates | duplicates % | beyond committed |');
  out.push('|---|---|---|---|---|---|---|');
  const row = (name: string, a: AuditResult) =>
    `| ${name} | ${a.expected} | ${a.records} | ${a.missing} | ${a.duplicates} | ${pct(a.duplicates, a.expected)} | ${a.beyond} |`;
  out.push(row('datagen (every seq up to the committed offset)', r.genAudit));
  out.push(row('file (every line written)', r.lineAudit));
  out.push('');
  out.push(
    `File: ${r.linesWritten} lines written (${r.size} bytes); committed position ${r.position} = ${r.committedLines} lines${r.position === r.size ? ' (the whole file)' : ' (NOT the whole file)'}.`,
  );
  out.push('');
  out.push(
    'Kill to first record: for each task the killed worker ran, the time from the SIGKILL to the first record of that task in its data topic with a later CreateTime (set by the sender of whichever worker ran it next).',
  );
  out.push('');
  out.push(
    '| # | at (s) | worker | down (s) | restart to joined (s) | tasks on it | kill to first record, per task (s) | min | median | max |',
  );
  out.push('|---|---|---|---|---|---|---|---|---|---|');
  const all: number[] = [];
  r.kills.forEach((k, i) => {
    const first = firstAfter(k.at, r.gen, r.lines, k.tasks);
    const times = k.tasks.map((t) => {
      const at = first.get(`${t.connector}/${t.task}`);
      return at === undefined ? undefined : at - k.at;
    });
    const known = times.filter((t): t is number => t !== undefined);
    all.push(...known);
    const q = quantiles(known);
    const per = k.tasks.map((t, j) => `${t.connector.replace('chaos-', '')}/${t.task}: ${seconds(times[j])}`).join(', ') || '-';
    out.push(
      `| ${i + 1} | ${seconds(k.at - t0)} | ${k.worker.index} | ${seconds(k.restartedAt === undefined ? undefined : k.restartedAt - k.at)} | ${seconds(k.rejoinedAt === undefined || k.restartedAt === undefined ? undefined : k.rejoinedAt - k.restartedAt)} | ${k.tasks.length} | ${per} | ${seconds(q?.min)} | ${seconds(q?.median)} | ${seconds(q?.max)} |`,
    );
  });
  const q = quantiles(all);
  out.push(`| all | | | | | ${all.length} | | ${seconds(q?.min)} | ${seconds(q?.median)} | ${seconds(q?.max)} |`);
  return out.join('\n');
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
