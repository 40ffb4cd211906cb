/**
 * Checking a distributed cluster from outside, for the distributed integration tests and the
 * chaos run (bench/chaos.ts): connector status through REST, committed offsets from the offsets
 * topic, the data topic read back, and the audit of it: records missing below the committed
 * offsets (a loss) and records written more than once (at-least-once duplicates).
 *
 * No vitest import: bench scripts use it too.
 */
import type { Kafka } from 'kafkajs';
import { TopicReader, type TopicRecord } from '../../src/kafka/topic-reader.js';
import { KafkaOffsetStore } from '../../src/storage/kafka-offset-store.js';
import { rest } from './distributed-cluster.js';

/** One task in `GET /connectors/{name}/status`. */
export interface TaskState {
  id: number;
  state: string;
  worker_id: string;
}

/** `GET /connectors/{name}/status`, as far as these checks use it. */
export interface ConnectorStatus {
  connector: { state: string; worker_id: string };
  tasks: TaskState[];
}

/** The status of `name` as the worker at `url` sees it; undefined when it answers anything but 200. */
export async function connectorStatus(url: string, name: string): Promise<ConnectorStatus | undefined> {
  const r = await rest(url, 'GET', `/connectors/${name}/status`);
  return r.status === 200 ? (r.body as ConnectorStatus) : undefined;
}

/**
 * Waits until `count` tasks of `name` are RUNNING (as the worker at `url` sees it) and `check`
 * holds; returns the tasks. Throws after `ms` with the last tasks seen.
 */
export async function tasksRunning(
  url: string,
  name: string,
  count: number,
  check: (tasks: TaskState[]) => boolean = () => true,
  ms = 60_000,
): Promise<TaskState[]> {
  let last: TaskState[] = [];
  const deadline = Date.now() + ms;
  for (;;) {
    const s = await connectorStatus(url, name).catch(() => undefined);
    last = s?.tasks ?? [];
    if (last.length === count && last.every((t) => t.state === 'RUNNING') && check(last)) return last;
    if (Date.now() > deadline) throw new Error(`tasks of ${name} not all RUNNING within ${ms} ms: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The committed offsets of `connector` in the offsets topic `topic`: source partition -> offset. */
export async function committedOffsets(
  kafka: Kafka,
  topic: string,
  connector: string,
): Promise<Array<{ partition: Record<string, unknown>; offset: Record<string, unknown> }>> {
  const store = new KafkaOffsetStore({ kafka, topic, logger: { warn() {} } });
  await store.start();
  try {
    const entries = await store.read(connector);
    return entries.map((e) => ({
      partition: e.partition as Record<string, unknown>,
      offset: e.offset as Record<string, unknown>,
    }));
  } finally {
    await store.stop();
  }
}

/** Committed `seq` per datagen key (`task-sequence`). */
export async function committedDatagenSeqs(kafka: Kafka, topic: string, connector: string): Promise<Map<string, number>> {
  const entries = await committedOffsets(kafka, topic, connector);
  return new Map(
    entries.map((e) => {
      const p = e.partition as { task: number; sequence: number };
      return [`${p.task}-${p.sequence}`, (e.offset as { seq: number }).seq];
    }),
  );
}

/**
 * Reads `topic` from the beginning until at least `expectedCount` records are there and
 * everything up to the end offsets at that moment is read (so duplicates present by then are
 * returned too). Records are ordered by partition, then offset. Rejects after `timeoutMs`
 * saying how many records it got from each partition, why the read stopped, and the topic's end
 * offsets then (records missing from the topic or missed by the reader are told apart).
 */
export async function readWholeTopic(
  kafka: Kafka,
  topic: string,
  expectedCount: number,
  timeoutMs = 30_000,
): Promise<TopicRecord[]> {
  const records: TopicRecord[] = [];
  const reader = new TopicReader({ kafka, topic, groupIdPrefix: 'tributary-test-consume', onRecord: (r) => records.push(r) });
  const deadline = Date.now() + timeoutMs;
  // Why the last read to the end did not get there (a timeout catching up, a broker error): kept for the failure message.
  let readError: string | undefined;
  try {
    await reader.start();
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      try {
        await reader.readToEnd(left);
        readError = undefined;
      } catch (e) {
        // A read that fails before the deadline (the reader's group rebalancing, a broker error)
        // is tried again; the last error is in the failure message.
        readError = e instanceof Error ? e.message : String(e);
        await new Promise((r) => setTimeout(r, 250));
        continue;
      }
      if (records.length >= expectedCount) {
        return records.sort((a, b) => a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)));
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(
      `readWholeTopic('${topic}'): got ${records.length} of ${expectedCount} records within ${timeoutMs} ms (${perPartition(records)}; ${readError ?? 'read up to the end offsets, which hold no more'}; end offsets: ${await endOffsets(kafka, topic)})`,
    );
  } finally {
    await reader.stop();
  }
}

/** `partition 0: 2 records, partition 1: 0 records`-like, of the partitions records came from. */
function perPartition(records: readonly TopicRecord[]): string {
  const counts = new Map<number, number>();
  for (const r of records) counts.set(r.partition, (counts.get(r.partition) ?? 0) + 1);
  if (counts.size === 0) return 'no records read';
  return [...counts]
    .sort(([a], [b]) => a - b)
    .map(([p, n]) => `partition ${p}: ${n} read`)
    .join(', ');
}

/** The topic's end offsets as the broker gives them now (`0: 2, 1: 0`), or why they could not be had. */
async function endOffsets(kafka: Kafka, topic: string): Promise<string> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    const offsets = await admin.fetchTopicOffsets(topic);
    return offsets
      .sort((a, b) => a.partition - b.partition)
      .map((o) => `${o.partition}: ${o.high}`)
      .join(', ');
  } catch (e) {
    return `not fetched (${e instanceof Error ? e.message : String(e)})`;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

/** What an audit found. */
export interface AuditResult {
  /** Records that must be in the topic. */
  expected: number;
  /** Records read from the topic. */
  records: number;
  /** Expected records not in the topic: a loss. */
  missing: number;
  /** Extra copies of records (a record there three times counts 2). */
  duplicates: number;
  /** Distinct records in the topic beyond what was expected (written, offset not committed). */
  beyond: number;
}

/**
 * Datagen records (values `{task, sequence, seq}`) against the committed `seq` per
 * `task-sequence` key: every seq 1..committed must be there.
 */
export function auditDatagen(records: readonly TopicRecord[], committed: ReadonlyMap<string, number>): AuditResult {
  const seen = new Map<string, Map<number, number>>();
  for (const r of records) {
    const v = JSON.parse(String(r.value)) as { task: number; sequence: number; seq: number };
    const key = `${v.task}-${v.sequence}`;
    const m = seen.get(key) ?? new Map<number, number>();
    m.set(v.seq, (m.get(v.seq) ?? 0) + 1);
    seen.set(key, m);
  }
  let missing = 0;
  let duplicates = 0;
  let beyond = 0;
  for (const [key, upTo] of committed) {
    const m = seen.get(key) ?? new Map<number, number>();
    for (let s = 1; s <= upTo; s++) if (!m.has(s)) missing++;
  }
  for (const [key, m] of seen) {
    const upTo = committed.get(key) ?? 0;
    for (const [seq, n] of m) {
      duplicates += n - 1;
      if (seq > upTo) beyond++;
    }
  }
  const expected = [...committed.values()].reduce((a, b) => a + b, 0);
  return { expected, records: records.length, missing, duplicates, beyond };
}

/**
 * Line records of the file source (JSON string values `"line N"`) against lines 1..`lines`.
 */
export function auditLines(records: readonly TopicRecord[], lines: number): AuditResult {
  const counts = new Map<number, number>();
  for (const r of records) {
    const n = Number(/^"?line (\d+)"?$/.exec(String(r.value))?.[1] ?? Number.NaN);
    counts.set(n, (counts.get(n) ?? 0) + 1);
  }
  let missing = 0;
  let duplicates = 0;
  let beyond = 0;
  for (let n = 1; n <= lines; n++) if (!counts.has(n)) missing++;
  for (const [n, c] of counts) {
    duplicates += c - 1;
    if (!(n >= 1 && n <= lines)) beyond++;
  }
  return { expected: lines, records: records.length, missing, duplicates, beyond };
}
