import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TributaryError } from '../../src/api/errors.js';
import type { RdkafkaDeliveryReport } from '../../src/kafka/librdkafka-sender.js';
import { LibrdkafkaTransactionalSender } from '../../src/kafka/librdkafka-transactional-sender.js';
import { resolveProducerConfig } from '../../src/kafka/producer-config.js';
import type { RecordMetadata } from '../../src/runtime/ports.js';

type Report = (error: Error | null, report: RdkafkaDeliveryReport) => void;

/**
 * A stand-in for the binding's transactional Producer that does what the real one does to the
 * sender's timing: commitTransaction calls back while the records' delivery reports are still
 * on their way (the binding hands them to JavaScript 100 per event-loop turn). The test
 * decides when they come (`deliver`).
 */
class FakeProducer {
  static last: FakeProducer | undefined;
  /** What the next producer's initTransactions answers. */
  static initError: Error | null = null;
  disconnected = false;
  /** What disconnect and setPollInterval were asked, in order. */
  calls: string[] = [];
  /** Records of the open transaction, and of every transaction not delivered yet. */
  produced: Array<{ topic: string; opaque: unknown }> = [];
  commitError: Error | null = null;
  private report: Report | undefined;
  private nextOffset = 0;
  constructor() {
    FakeProducer.last = this;
  }
  connect(_o: object, cb: (e: Error | null) => void) {
    cb(null);
  }
  disconnect(cb: () => void) {
    this.disconnected = true;
    this.calls.push('disconnect');
    cb();
  }
  setPollInterval(ms: number) {
    this.calls.push(`setPollInterval(${ms})`);
  }
  on(event: string, listener: Report) {
    if (event === 'delivery-report') this.report = listener;
  }
  initTransactions(_t: number, cb: (e: Error | null) => void) {
    const error = FakeProducer.initError;
    setImmediate(() => cb(error));
  }
  beginTransaction(cb: (e: Error | null) => void) {
    this.calls.push('beginTransaction');
    setImmediate(() => cb(null));
  }
  /** librdkafka's state after a newer producer fenced this one: what produce() and abortTransaction() answer. */
  fenced = false;
  produce(topic: string, _p: number | null, _v: Buffer | null, _k: unknown, _t: unknown, opaque: unknown) {
    if (this.fenced) throw Object.assign(new Error('Local: Fatal error'), { code: -150 });
    this.produced.push({ topic, opaque });
  }
  commitTransaction(_t: number, cb: (e: Error | null) => void) {
    setImmediate(() => cb(this.commitError));
  }
  abortTransaction(_t: number, cb: (e: Error | null) => void) {
    const fenced = Object.assign(
      new Error('Failed to add partitions to transaction: Local: This instance has been fenced by a newer instance'),
      { code: -144, isFatal: true },
    );
    setImmediate(() => cb(this.fenced ? fenced : null));
  }
  /** Delivers the reports of the first `n` records produced and not delivered yet (all by default). */
  deliver(n = this.produced.length) {
    for (const m of this.produced.splice(0, n)) {
      this.report?.(null, { topic: m.topic, partition: 2, offset: this.nextOffset++, opaque: m.opaque });
    }
  }
}

let baseDir: string;

beforeAll(async () => {
  // connect() loads @confluentinc/kafka-javascript from baseDir: there, a module handing out the fake.
  baseDir = await mkdtemp(join(tmpdir(), 'tributary-rdkafka-tx-'));
  const pkg = join(baseDir, 'node_modules', '@confluentinc', 'kafka-javascript');
  await mkdir(pkg, { recursive: true });
  await writeFile(join(pkg, 'index.js'), 'module.exports = globalThis.__tributaryFakeRdkafka;\n');
  (globalThis as Record<string, unknown>).__tributaryFakeRdkafka = { Producer: FakeProducer, librdkafkaVersion: 'fake' };
});

afterAll(async () => {
  delete (globalThis as Record<string, unknown>).__tributaryFakeRdkafka;
  await rm(baseDir, { recursive: true, force: true });
});

async function connect(transactionTimeoutMs = 60_000): Promise<{ sender: LibrdkafkaTransactionalSender; fake: FakeProducer }> {
  const config = resolveProducerConfig({}, { name: 'tx-unit' }, { task: 0 });
  const sender = await LibrdkafkaTransactionalSender.connect(
    '127.0.0.1:9',
    config,
    {},
    {
      transactionalId: 'tx-unit',
      offsetsTopic: 'offsets',
      offsetMessages: () => [{ key: 'k', value: 'v' }],
      transactionTimeoutMs,
      baseDir,
    },
  );
  return { sender, fake: FakeProducer.last as FakeProducer };
}

const tick = () => new Promise<void>((r) => setImmediate(r));

describe('LibrdkafkaTransactionalSender', () => {
  it('calls back a committed transaction once the reports that come after the commit are in, each with its own', async () => {
    const { sender, fake } = await connect();
    const got: Array<RecordMetadata | Error | undefined> = [];
    for (let i = 0; i < 5; i++) sender.send({ topic: 't', key: null, value: Buffer.from([i]) }, (e, m) => got.push(e ?? m));
    let committed = false;
    const commit = sender.commitTransaction('c', []).then(() => {
      committed = true;
    });
    // Two reports before the commit's callback, the rest (and the offset record's) after it.
    while (fake.produced.length < 6) await tick();
    fake.deliver(2);
    for (let i = 0; i < 5; i++) await tick();
    expect(committed).toBe(false);
    expect(got).toEqual([]);
    fake.deliver();
    await commit;
    expect(got).toEqual([0, 1, 2, 3, 4].map((offset) => ({ topic: 't', partition: 2, offset, timestamp: undefined })));
    await sender.close();
  });

  it('fails the records of a fenced transaction and of every later one, whatever reports come late', async () => {
    const { sender, fake } = await connect();
    const first: unknown[] = [];
    const second: Array<RecordMetadata | Error | undefined> = [];
    sender.send({ topic: 't', key: null, value: null }, (e, m) => first.push(e ?? m));
    fake.commitError = Object.assign(new Error('Broker: producer fenced'), { code: 90 });
    await expect(sender.commitTransaction('c', [])).rejects.toMatchObject({ code: 'TRANSACTION_FENCED' });
    expect(first).toEqual([expect.objectContaining({ code: 'TRANSACTION_FENCED' })]);
    // Its report comes now: nothing takes it, and the broken sender fails the next transaction.
    fake.deliver();
    sender.send({ topic: 't', key: null, value: null }, (e, m) => second.push(e ?? m));
    await expect(sender.commitTransaction('c', [])).rejects.toMatchObject({ code: 'TRANSACTION_FENCED' });
    expect(second).toEqual([expect.objectContaining({ code: 'TRANSACTION_FENCED' })]);
    await sender.close();
  });

  it('does not attribute an earlier transaction’s report to a later one', async () => {
    const { sender, fake } = await connect(50);
    const first: Array<RecordMetadata | Error | undefined> = [];
    const second: Array<RecordMetadata | Error | undefined> = [];
    sender.send({ topic: 'a', key: null, value: null }, (e, m) => first.push(e ?? m));
    const one = sender.commitTransaction('c', []);
    // The first transaction's record report is held back past the sender's wait (50 ms).
    while (fake.produced.length < 2) await tick();
    fake.produced.splice(0, 1);
    fake.deliver();
    await one;
    // Committed, its report never came: called back as written, where unknown.
    expect(first).toEqual([{ topic: 'a', partition: -1, offset: -1 }]);
    sender.send({ topic: 'b', key: null, value: null }, (e, m) => second.push(e ?? m));
    const two = sender.commitTransaction('c', []);
    while (fake.produced.length < 2) await tick();
    // A stray report with the first transaction's id comes first: it must not count for 'b'.
    (fake as unknown as { report: Report }).report(null, { topic: 'a', partition: 0, offset: 99, opaque: 0 });
    for (let i = 0; i < 3; i++) await tick();
    expect(second).toEqual([]);
    fake.deliver();
    await two;
    expect(second).toEqual([expect.objectContaining({ topic: 'b', partition: 2 })]);
    await sender.close();
  });
  it('a callback that throws leaves the committed transaction committed: no abort, no second callback, the others called back', async () => {
    const { sender, fake } = await connect();
    const calls: Array<[string, RecordMetadata | Error | undefined]> = [];
    sender.send({ topic: 't', key: null, value: null }, (e, m) => {
      calls.push(['a', e ?? m]);
      throw new Error('callback of a');
    });
    sender.send({ topic: 't', key: null, value: null }, (e, m) => calls.push(['b', e ?? m]));
    const commit = sender.commitTransaction('c', []);
    while (fake.produced.length < 3) await tick();
    fake.deliver();
    await expect(commit).rejects.toThrow('callback of a');
    expect(calls).toEqual([
      ['a', expect.objectContaining({ partition: 2, offset: 0 })],
      ['b', expect.objectContaining({ partition: 2, offset: 1 })],
    ]);
    // Not broken: the next transaction commits.
    sender.send({ topic: 't', key: null, value: null }, (e, m) => calls.push(['c', e ?? m]));
    const next = sender.commitTransaction('c', []);
    while (fake.produced.length < 2) await tick();
    fake.deliver();
    await next;
    expect(calls[2]).toEqual(['c', expect.objectContaining({ partition: 2 })]);
    await sender.close();
  });
  it('reports a producer fenced while it writes a transaction as TRANSACTION_FENCED, not as a fatal error of unknown cause', async () => {
    const { sender, fake } = await connect();
    const got: unknown[] = [];
    fake.fenced = true;
    sender.send({ topic: 't', key: null, value: null }, (e) => got.push(e));
    const fenced = { code: 'TRANSACTION_FENCED', message: expect.stringContaining('fenced by a newer instance') };
    await expect(sender.commitTransaction('c', [])).rejects.toMatchObject(fenced);
    expect(got).toEqual([expect.objectContaining(fenced)]);
    await sender.close();
  });
  it('disconnects and says why when initTransactions fails, so a restart leaves no client behind', async () => {
    FakeProducer.initError = Object.assign(new Error('Broker: Transactional Id authorization failed'), { code: 53 });
    try {
      await expect(connect()).rejects.toMatchObject({
        code: 'TRANSACTION_FAILED',
        message: expect.stringContaining("transactional id 'tx-unit' could not be initialised"),
      });
      expect(FakeProducer.last?.disconnected).toBe(true);
      expect(FakeProducer.last?.calls).toEqual(['setPollInterval(5)', 'setPollInterval(0)', 'disconnect']);
    } finally {
      FakeProducer.initError = null;
    }
  });
  it('stops the poll interval before it disconnects, once however often close() is called', async () => {
    const { sender, fake } = await connect();
    await Promise.all([sender.close(), sender.close()]);
    await sender.close();
    // The binding's poll() does not take the lock its disconnect deletes the handle under.
    expect(fake.calls).toEqual(['setPollInterval(5)', 'setPollInterval(0)', 'disconnect']);
  });
  it('refuses a transaction asked for after close(), which would run alongside the disconnect', async () => {
    const { sender, fake } = await connect();
    const closing = sender.close();
    await expect(sender.commitTransaction('c', [{ partition: { p: 1 }, offset: { o: 1 } }])).rejects.toMatchObject({
      code: 'TRANSACTION_FAILED',
      message: expect.stringContaining('after the transactional producer was closed; nothing of it was written'),
    });
    await closing;
    expect(fake.calls).toEqual(['setPollInterval(5)', 'setPollInterval(0)', 'disconnect']);
  });
  it("fails a transaction whose offsets the task refused with the task's own error, before anything is sent", async () => {
    const { sender, fake } = await connect();
    const got: unknown[] = [];
    sender.send({ topic: 't', key: null, value: null }, (e) => got.push(e));
    const refused = new TributaryError(
      'RECORD_INVALID',
      'Task c-0 produced a source offset that would not be read back as given',
    );
    await expect(sender.commitTransaction('c', Promise.reject(refused))).rejects.toBe(refused);
    expect(got).toEqual([refused]);
    expect(fake.calls).not.toContain('beginTransaction');
    await sender.close();
  });
});
