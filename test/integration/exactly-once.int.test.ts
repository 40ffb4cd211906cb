import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { expect, it } from 'vitest';
import {
  type Cli,
  committedOffsets,
  readTopic,
  runDir,
  sleep,
  startCli,
  topicEnd,
  waitFor,
} from '../helpers/exactly-once-runs.js';
import { describeKafka, requireKafkaBootstrap } from '../helpers/kafka.js';
import { describeEachSender } from '../helpers/senders.js';

const SEQUENCES = 3;
/** Records of the datagen task (max.records counts over all its sequences). */
const TOTAL = 40_000;
const CYCLES = 4;

const datagen = {
  'connector.class': './examples/datagen/src/index.ts#DatagenConnector',
  // Up to 2000 per poll round: a transaction is mostly being written, so many SIGKILLs hit one
  // open (the broker keeps its records, aborted). The rate keeps the run longer than the cycles.
  rate: 6000,
  partitions: SEQUENCES,
  'max.records': TOTAL,
  'batch.size': 2000,
  'heartbeat.interval.ms': 200,
};

/** seq numbers of each datagen sequence in Kafka order (a sequence is keyed, so it lives in one partition). */
function bySequence(records: ReadonlyArray<{ value: string }>): Map<number, number[]> {
  const by = new Map<number, number[]>();
  for (const r of records) {
    const v = JSON.parse(r.value) as { sequence: number; seq: number };
    const list = by.get(v.sequence) ?? [];
    by.set(v.sequence, list);
    list.push(v.seq);
  }
  return by;
}

const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

/** Committed seq per datagen sequence. */
async function committedSeqs(kafka: Kafka, offsets: string): Promise<Map<number, number>> {
  const entries = await committedOffsets(kafka, offsets);
  return new Map(entries.map((e) => [Number(e.partition.sequence), Number(e.offset?.seq)]));
}

async function datagenDone(kafka: Kafka, offsets: string): Promise<boolean> {
  return [...(await committedSeqs(kafka, offsets)).values()].reduce((a, b) => a + b, 0) === TOTAL;
}

/**
 * SIGKILLs a fresh worker `cycles` times at random points mid-stream (after its task started and
 * wrote at least `minNew` more records), then lets a last one finish and stops it with SIGTERM.
 */
async function killCycles(
  kafka: Kafka,
  dir: string,
  data: string,
  cycles: number,
  finished: () => Promise<boolean>,
  minNew = 500,
) {
  const started = async (cli: Cli) =>
    waitFor(async () => cli.stderr().includes('"event":"task.started"'), 60_000, 'the task to start');
  for (let cycle = 0; cycle < cycles; cycle++) {
    const cli = startCli(dir);
    try {
      await started(cli);
      const before = await topicEnd(kafka, data);
      await waitFor(async () => (await topicEnd(kafka, data)) > before + minNew, 60_000, `records in cycle ${cycle}`);
      await sleep(Math.floor(Math.random() * 300));
    } catch (e) {
      cli.child.kill('SIGKILL');
      throw new Error(`${(e as Error).message}; worker log: ${cli.stderr().slice(-3000)}`);
    }
    cli.child.kill('SIGKILL');
    await cli.exited;
  }
  const last = startCli(dir);
  try {
    await started(last);
    await waitFor(finished, 120_000, 'every source partition committed to its end');
  } catch (e) {
    last.child.kill('SIGKILL');
    throw new Error(`${(e as Error).message}; worker log: ${last.stderr().slice(-3000)}`);
  }
  last.child.kill('SIGTERM');
  expect(await last.exited).toBe(0);
  expect(last.stderr()).not.toContain('"event":"task.failed"');
  // kafkajs#1315's retried CONCURRENT_TRANSACTIONS are not logged as errors (they are routine).
  expect(last.stderr()).not.toContain('another concurrent operation on the same transaction');
}

describeKafka('exactly-once source delivery (KIP-618) on the real broker', () => {
  describeEachSender('datagen with SIGKILLs', (sender) => {
    it('a read_committed consumer sees every datagen record exactly once, in order, across SIGKILLs mid-stream', async () => {
      const bootstrap = requireKafkaBootstrap();
      const kafka = new Kafka({ brokers: bootstrap.split(','), logLevel: logLevel.NOTHING });
      const { dir, data, offsets, heartbeats } = await runDir(bootstrap, { exactlyOnce: true, sender, connector: datagen });
      await killCycles(kafka, dir, data, CYCLES, () => datagenDone(kafka, offsets), 3000);

      const ends = await committedSeqs(kafka, offsets);
      const committed = await readTopic(kafka, data, { readUncommitted: false, atLeast: TOTAL });
      const by = bySequence(committed);
      for (let s = 0; s < SEQUENCES; s++) expect(by.get(s), `sequence ${s}`).toEqual(upTo(ends.get(s) ?? -1));
      expect(committed).toHaveLength(TOTAL);

      // What the killed workers had sent in open transactions is in the log, but aborted.
      const all = await readTopic(kafka, data, { readUncommitted: true, atLeast: committed.length });
      console.log(
        `[exactly-once] datagen, sender=${sender}: ${committed.length} records committed, ${all.length - committed.length} aborted records in the log after ${CYCLES} SIGKILLs`,
      );
      expect(all.length).toBeGreaterThanOrEqual(committed.length);

      // Heartbeats took part in the transactions: committed ones are visible, and the committed offsets are the ends.
      const beats = await readTopic(kafka, heartbeats, { readUncommitted: false, atLeast: 1, quietMs: 500 });
      expect(beats.length).toBeGreaterThan(0);
      expect(ends.size).toBe(SEQUENCES);
    }, 300_000);
  });

  it('with transaction.boundary=interval, a read_committed consumer sees every record exactly once across SIGKILLs', async () => {
    const bootstrap = requireKafkaBootstrap();
    const kafka = new Kafka({ brokers: bootstrap.split(','), logLevel: logLevel.NOTHING });
    const { dir, data, offsets } = await runDir(bootstrap, {
      exactlyOnce: true,
      connector: { ...datagen, 'transaction.boundary': 'interval', 'transaction.boundary.interval.ms': 400 },
    });
    await killCycles(kafka, dir, data, 3, () => datagenDone(kafka, offsets), 3000);
    const ends = await committedSeqs(kafka, offsets);
    const committed = await readTopic(kafka, data, { readUncommitted: false, atLeast: TOTAL });
    const by = bySequence(committed);
    for (let s = 0; s < SEQUENCES; s++) expect(by.get(s), `sequence ${s}`).toEqual(upTo(ends.get(s) ?? -1));
    expect(committed).toHaveLength(TOTAL);
  }, 300_000);

  it('without exactly-once, the same SIGKILLs leave duplicates in the topic (the contrast)', async () => {
    const bootstrap = requireKafkaBootstrap();
    const kafka = new Kafka({ brokers: bootstrap.split(','), logLevel: logLevel.NOTHING });
    const { dir, data, offsets } = await runDir(bootstrap, { exactlyOnce: false, connector: datagen });
    await killCycles(kafka, dir, data, CYCLES, () => datagenDone(kafka, offsets), 3000);
    const ends = await committedSeqs(kafka, offsets);
    const records = await readTopic(kafka, data, { readUncommitted: false, atLeast: TOTAL });
    const by = bySequence(records);
    for (let s = 0; s < SEQUENCES; s++) expect(new Set(by.get(s))).toEqual(new Set(upTo(ends.get(s) ?? -1)));
    const duplicates = records.length - TOTAL;
    console.log(
      `[exactly-once] contrast, at-least-once: ${duplicates} duplicates of ${TOTAL} records (${((100 * duplicates) / TOTAL).toFixed(1)} %) after ${CYCLES} SIGKILLs`,
    );
    expect(duplicates).toBeGreaterThan(0);
  }, 300_000);

  it('a read_committed consumer sees every line of a file exactly once, in order, across SIGKILLs', async () => {
    const bootstrap = requireKafkaBootstrap();
    const kafka = new Kafka({ brokers: bootstrap.split(','), logLevel: logLevel.NOTHING });
    const lines = 100_000;
    const { mkdtemp } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const fileDir = await mkdtemp(join(tmpdir(), 'tributary-eos-file-'));
    const file = join(fileDir, 'lines.txt');
    await writeFile(file, `${Array.from({ length: lines }, (_, i) => `line ${i + 1}`).join('\n')}\n`);
    const { dir, data, offsets } = await runDir(bootstrap, {
      exactlyOnce: true,
      // Lines have no key: one Kafka partition keeps them in file order.
      partitions: 1,
      connector: {
        'connector.class': './examples/file-source/src/index.ts#FileSourceConnector',
        file,
        'batch.size': 500,
      },
    });
    const size = (await import('node:fs')).statSync(file).size;
    await killCycles(kafka, dir, data, CYCLES, async () => {
      const entries = await committedOffsets(kafka, offsets);
      return entries.length === 1 && Number(entries[0]?.offset?.position) === size;
    });
    const records = await readTopic(kafka, data, { readUncommitted: false, atLeast: lines });
    expect(records.map((r) => r.value.replace(/^"|"$/g, ''))).toEqual(Array.from({ length: lines }, (_, i) => `line ${i + 1}`));
  }, 300_000);

  describeEachSender('zombie fencing', (sender) => {
    it('a worker frozen with SIGSTOP and resumed after its replacement started writes nothing a read_committed consumer sees', async () => {
      const bootstrap = requireKafkaBootstrap();
      const kafka = new Kafka({ brokers: bootstrap.split(','), logLevel: logLevel.NOTHING });
      const { dir, data, offsets } = await runDir(bootstrap, { exactlyOnce: true, sender, connector: datagen });
      const zombie = startCli(dir);
      await waitFor(async () => zombie.stderr().includes('"event":"task.started"'), 60_000, 'the first task to start');
      await waitFor(async () => (await topicEnd(kafka, data)) > 3000, 60_000, 'records of the first worker');
      zombie.child.kill('SIGSTOP');
      try {
        const replacement = startCli(dir);
        await waitFor(async () => replacement.stderr().includes('"event":"task.started"'), 60_000, 'the replacement to start');
        await waitFor(() => datagenDone(kafka, offsets), 120_000, 'the replacement to commit everything');
        const before = await topicEnd(kafka, data);
        zombie.child.kill('SIGCONT');
        // The zombie goes on polling and tries to commit: fenced, its task fails.
        await waitFor(async () => zombie.stderr().includes('TRANSACTION_FENCED'), 60_000, 'the zombie to be fenced').catch(
          (e) => {
            throw new Error(`${(e as Error).message}; zombie log: ${zombie.stderr().slice(-3000)}`);
          },
        );
        expect(zombie.stderr()).toContain('"event":"task.failed"');
        replacement.child.kill('SIGTERM');
        expect(await replacement.exited).toBe(0);
        expect(replacement.stderr()).not.toContain('"event":"task.failed"');
        const ends = await committedSeqs(kafka, offsets);
        const committed = await readTopic(kafka, data, { readUncommitted: false, atLeast: TOTAL });
        const by = bySequence(committed);
        for (let s = 0; s < SEQUENCES; s++) expect(by.get(s), `sequence ${s}`).toEqual(upTo(ends.get(s) ?? -1));
        expect(committed).toHaveLength(TOTAL);
        console.log(
          `[exactly-once] zombie, sender=${sender}: log end ${before} before the resume, ${await topicEnd(kafka, data)} after; ${committed.length} records visible to read_committed`,
        );
      } finally {
        zombie.child.kill('SIGCONT');
        zombie.child.kill('SIGKILL');
        await zombie.exited;
      }
    }, 300_000);
  });
});
