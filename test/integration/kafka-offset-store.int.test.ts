import { type Kafka, Partitioners, type Producer } from 'kafkajs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { canonicalJson } from '../../src/api/canonical-json.js';
import { isTributaryError } from '../../src/api/errors.js';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import type { JsonObject } from '../../src/runtime/ports.js';
import { KafkaOffsetStore } from '../../src/storage/kafka-offset-store.js';
import { consumeAll, describeKafka, startOwnBroker, testKafka, uniqueTopic } from '../helpers/kafka.js';

/** Key → Kafka partition in a 25-partition topic, as Java's producer computes it (murmur2), from kafka-clients 4.4.0. */
const JAVA_PARTITION_OF_25: Record<string, number> = {
  '["file-src",{"filename":"test.txt"}]': 0,
  '["file-src",{"filename":"gone.txt"}]': 13,
  '["file-src",{"z":1,"a":"x"}]': 18,
  '["my-conn",{"dir":"/x","filename":"a.txt"}]': 14,
  '["my-conn",{"filename":"b"}]': 5,
};

function captureLogger(): { warnings: Array<{ obj: object; msg: string }>; warn(obj: object, msg: string): void } {
  const warnings: Array<{ obj: object; msg: string }> = [];
  return { warnings, warn: (obj, msg) => warnings.push({ obj, msg }) };
}

/** Writes records exactly as given, as Kafka Connect's producer would (murmur2 on the key bytes); optional CreateTime in ms. */
async function produceRaw(
  producer: Producer,
  topic: string,
  records: Array<[string | null, string | null] | [string | null, string | null, number]>,
): Promise<void> {
  await producer.sendBatch({
    acks: -1,
    topicMessages: [
      {
        topic,
        messages: records.map(([key, value, timestamp]) => ({
          key,
          value,
          ...(timestamp === undefined ? {} : { timestamp: String(timestamp) }),
        })),
      },
    ],
  });
}

/**
 * Two key texts of one source partition, as Kafka Connect's JsonConverter (schemas.enable=false)
 * and Tributary write them: JsonConverter keeps the map's iteration order. Checked with
 * connect-json 4.4.0: a HashMap of {table, server, db} gives {"server":..,"table":..,"db":..};
 * of {dir, filename}, {"filename":..,"dir":..}.
 */
function twoTexts(connector: string, i: number): { java: string; sorted: string; partition: JsonObject } {
  const kind = i % 2;
  if (kind === 0) {
    return {
      java: `["${connector}",{"server":"s${i}","table":"t","db":"d"}]`,
      sorted: `["${connector}",{"db":"d","server":"s${i}","table":"t"}]`,
      partition: { db: 'd', server: `s${i}`, table: 't' },
    };
  }
  return {
    java: `["${connector}",{"filename":"f${i}","dir":"/x"}]`,
    sorted: `["${connector}",{"dir":"/x","filename":"f${i}"}]`,
    partition: { dir: '/x', filename: `f${i}` },
  };
}

describeKafka('KafkaOffsetStore', () => {
  let kafka: Kafka;
  let admin: TopicAdmin;
  let raw: Producer;
  const stores: KafkaOffsetStore[] = [];

  function newStore(topic: string, logger = captureLogger()): KafkaOffsetStore {
    const store = new KafkaOffsetStore({ kafka, topic, admin, logger });
    stores.push(store);
    return store;
  }

  beforeAll(async () => {
    kafka = testKafka();
    admin = new TopicAdmin(kafka);
    raw = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await raw.connect();
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.stop()));
    await raw.disconnect();
    await admin.close();
  });

  it('reads what Kafka Connect wrote: latest wins, tombstones delete, other key orders match, bad keys are skipped', async () => {
    const topic = uniqueTopic('connect-offsets');
    await admin.ensureOffsetsTopic(topic); // 25 partitions, compacted, as a Connect worker makes it
    await produceRaw(raw, topic, [
      ['["file-src",{"filename":"test.txt"}]', '{"position":30}'],
      ['["file-src",{"z":1,"a":"x"}]', '{"position":5}'],
      ['["file-src",{"filename":"gone.txt"}]', '{"position":1}'],
      ['["other",{"p":1}]', '{"o":1}'],
      ['not json', '{"position":1}'],
      ['["only-one"]', '{"position":1}'],
      ['[1,{"p":1}]', '{"position":1}'],
      ['["file-src","not-an-object"]', '{"position":1}'],
    ]);
    await produceRaw(raw, topic, [
      ['["file-src",{"filename":"test.txt"}]', '{"position":60}'],
      ['["file-src",{"filename":"gone.txt"}]', null],
      ['["other",{"p":1}]', null],
    ]);

    const logger = captureLogger();
    const store = newStore(topic, logger);
    await store.start();
    const entries = await store.read('file-src');
    expect(entries).toHaveLength(2);
    expect(entries).toEqual(
      expect.arrayContaining([
        { partition: { filename: 'test.txt' }, offset: { position: 60 } },
        { partition: { a: 'x', z: 1 }, offset: { position: 5 } },
      ]),
    );
    expect(await store.read('other')).toEqual([]);
    expect(await store.read('nobody')).toEqual([]);
    expect(await store.connectors()).toEqual(['file-src']);
    // (A null key cannot be tested: the broker refuses keyless records in a compacted topic.)
    expect(logger.warnings.map((w) => w.msg).sort()).toEqual(
      [
        'Ignoring record with malformed key in offsets topic: not JSON',
        'Ignoring record with malformed key in offsets topic: an array of 1 elements, expected 2',
        'Ignoring record with malformed key in offsets topic: the first element (connector name) is not a string',
        'Ignoring record with malformed key in offsets topic: the second element (source partition) is not an object',
      ].sort(),
    );
  });

  it("writes exactly Kafka Connect's bytes, to the partition Java's producer would pick", async () => {
    const topic = uniqueTopic('tributary-offsets');
    const store = newStore(topic);
    await store.start();
    await store.write('my-conn', [
      {
        partition: { filename: 'a.txt', dir: '/x' },
        offset: { position: 10, line: 2, nested: { b: 1, a: [2, { d: 1, c: 2 }] } },
      },
      { partition: { filename: 'b' }, offset: null },
    ]);
    const records = await consumeAll(topic, 2, 30_000, kafka);
    expect(records.map((r) => [r.partition, r.key?.toString(), r.value?.toString() ?? null])).toEqual([
      [5, '["my-conn",{"filename":"b"}]', null],
      [14, '["my-conn",{"dir":"/x","filename":"a.txt"}]', '{"line":2,"nested":{"a":[2,{"c":2,"d":1}],"b":1},"position":10}'],
    ]);
    for (const r of records) expect(r.partition).toBe(JAVA_PARTITION_OF_25[r.key?.toString() ?? '']);
    expect(records.every((r) => Object.keys(r.headers).length === 0)).toBe(true);
  });

  it('reads its own writes, and a second store on the topic sees them', async () => {
    const topic = uniqueTopic('offsets');
    const first = newStore(topic);
    await first.start();
    await first.write('c', [
      { partition: { p: 1 }, offset: { n: 1 } },
      { partition: { p: 2 }, offset: { n: 2 } },
    ]);
    await first.write('c', [{ partition: { p: 1 }, offset: { n: 10 } }]);
    expect(sortByP(await first.read('c'))).toEqual([
      { partition: { p: 1 }, offset: { n: 10 } },
      { partition: { p: 2 }, offset: { n: 2 } },
    ]);
    await first.write('c', [{ partition: { p: 2 }, offset: null }]);
    expect(await first.read('c')).toEqual([{ partition: { p: 1 }, offset: { n: 10 } }]);

    const second = newStore(topic);
    await second.start();
    expect(await second.read('c')).toEqual([{ partition: { p: 1 }, offset: { n: 10 } }]);
    await second.write('d', [{ partition: { q: 'x' }, offset: { ok: true } }]);
    expect((await first.connectors()).sort()).toEqual(['c', 'd']);
  });

  it("updates a partition Java wrote with another key order under Java's own key bytes", async () => {
    const topic = uniqueTopic('offsets');
    await admin.ensureOffsetsTopic(topic);
    await produceRaw(raw, topic, [['["file-src",{"z":1,"a":"x"}]', '{"position":5}']]);
    const store = newStore(topic);
    await store.start();
    await store.write('file-src', [{ partition: { a: 'x', z: 1 }, offset: { position: 7 } }]);
    expect(await store.read('file-src')).toEqual([{ partition: { a: 'x', z: 1 }, offset: { position: 7 } }]);
    const records = await consumeAll(topic, 2, 30_000, kafka);
    expect(records.map((r) => [r.partition, r.key?.toString(), r.value?.toString()])).toEqual([
      [18, '["file-src",{"z":1,"a":"x"}]', '{"position":5}'],
      [18, '["file-src",{"z":1,"a":"x"}]', '{"position":7}'],
    ]);
  });

  it('refuses to start on a topic that is not compacted', async () => {
    const topic = uniqueTopic('not-compacted');
    await admin.ensureTopics([topic]);
    const store = newStore(topic);
    const error = await store.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isTributaryError(error) && error.code).toBe('TOPIC_INVALID');
  });

  it('fails read() of a connector whose stored offset is not a JSON object, until it is replaced', async () => {
    const topic = uniqueTopic('offsets');
    await admin.ensureOffsetsTopic(topic, { partitions: 1 });
    await produceRaw(raw, topic, [
      ['["bad",{"p":1}]', '{"position":'],
      ['["good",{"p":1}]', '{"position":1}'],
    ]);
    const logger = captureLogger();
    const store = newStore(topic, logger);
    await store.start();
    const error = await store.read('bad').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isTributaryError(error) && error.code).toBe('OFFSET_STORE_CORRUPT');
    expect((error as Error).message).toContain('{"p":1}');
    expect(await store.read('good')).toEqual([{ partition: { p: 1 }, offset: { position: 1 } }]);
    // A reset finds the unusable partition, so DELETE /offsets can repair it.
    expect(await store.partitions('bad')).toEqual([{ p: 1 }]);
    await store.write('bad', [{ partition: { p: 1 }, offset: { position: 2 } }]);
    expect(await store.read('bad')).toEqual([{ partition: { p: 1 }, offset: { position: 2 } }]);
    expect(logger.warnings).toHaveLength(1);
  });
  it('reads the newest of two key texts of one source partition, whatever order they are consumed in, and writes on under it', async () => {
    const topic = uniqueTopic('offsets');
    await admin.ensureOffsetsTopic(topic);
    const t0 = Date.now() - 60_000;
    const cases = Array.from({ length: 12 }, (_, i) => {
      const texts = twoTexts('moved', i);
      // Which text holds the newer value, and which of the two is produced first, both vary.
      const newer = i % 4 < 2 ? texts.java : texts.sorted;
      const older = newer === texts.java ? texts.sorted : texts.java;
      return { ...texts, newer, older, newerFirst: i % 2 === 0 };
    });
    const records: Array<[string, string, number]> = [];
    for (const c of cases) {
      const pair: Array<[string, string, number]> = [
        [c.newer, '{"v":"new"}', t0 + 1000],
        [c.older, '{"v":"old"}', t0],
      ];
      records.push(...(c.newerFirst ? pair : pair.reverse()));
    }
    await produceRaw(raw, topic, records);

    const store = newStore(topic);
    await store.start();
    const read = await store.read('moved');
    expect(read).toHaveLength(12);
    for (const c of cases) {
      expect(read.find((e) => canonicalJson(e.partition) === canonicalJson(c.partition))?.offset).toEqual({ v: 'new' });
    }

    await store.write(
      'moved',
      cases.map((c) => ({ partition: c.partition, offset: { v: 'newest' } })),
    );
    const all = await consumeAll(topic, 36, 30_000, kafka);
    const written = all.filter((r) => r.value?.toString() === '{"v":"newest"}').map((r) => r.key?.toString());
    expect(written.sort()).toEqual(cases.map((c) => c.newer).sort());
    // A store reading it all afresh agrees.
    const again = newStore(topic);
    await again.start();
    expect((await again.read('moved')).map((e) => e.offset)).toEqual(Array.from({ length: 12 }, () => ({ v: 'newest' })));
  }, 60_000);

  it('lets the newer of a value and a tombstone under two key texts win, whatever order they are consumed in', async () => {
    const topic = uniqueTopic('offsets');
    await admin.ensureOffsetsTopic(topic);
    const t0 = Date.now() - 60_000;
    const records: Array<[string, string | null, number]> = [];
    const kept: string[] = [];
    for (let i = 0; i < 12; i++) {
      const texts = twoTexts('tomb', i);
      const [a, b] = i % 4 < 2 ? [texts.java, texts.sorted] : [texts.sorted, texts.java];
      if (i % 2 === 0) {
        // The tombstone is newer: the partition is gone.
        records.push([b, null, t0 + 1000], [a, '{"v":"old"}', t0]);
      } else {
        // The value is newer: a stale tombstone under the other text does not delete it.
        records.push([a, '{"v":"new"}', t0 + 1000], [b, null, t0]);
        kept.push(canonicalJson(texts.partition));
      }
    }
    await produceRaw(raw, topic, records);
    const store = newStore(topic);
    await store.start();
    const read = await store.read('tomb');
    expect(read.map((e) => canonicalJson(e.partition)).sort()).toEqual(kept.sort());
    expect(read.every((e) => (e.offset as { v: string }).v === 'new')).toBe(true);
    expect(store.sizes()).toEqual({ partitions: 6, keyTexts: 6, tombstones: 0 });
  }, 60_000);

  it('writes a tombstone under every key text of the partition, so compaction cannot bring an older value back', async () => {
    const topic = uniqueTopic('offsets');
    await admin.ensureOffsetsTopic(topic);
    const t0 = Date.now() - 60_000;
    const records: Array<[string, string, number]> = [];
    const cases = Array.from({ length: 4 }, (_, i) => twoTexts('gone', i));
    for (const [i, c] of cases.entries()) {
      const [older, newer] = i < 2 ? [c.sorted, c.java] : [c.java, c.sorted];
      records.push([newer, '{"v":"new"}', t0 + 1000], [older, '{"v":"old"}', t0]);
    }
    await produceRaw(raw, topic, records);
    const store = newStore(topic);
    await store.start();
    await store.write(
      'gone',
      cases.map((c) => ({ partition: c.partition, offset: null })),
    );
    // Compaction keeps the latest record per key text, and drops tombstones after
    // delete.retention.ms: a text whose latest record is a value would then be read again.
    const all = await consumeAll(topic, 12, 30_000, kafka);
    const latest = new Map<string, string | null>();
    for (const r of all) latest.set(r.key?.toString() ?? '', r.value === null ? null : r.value.toString());
    for (const c of cases) {
      expect(latest.get(c.java)).toBeNull();
      expect(latest.get(c.sorted)).toBeNull();
    }
    expect(await store.read('gone')).toEqual([]);
  }, 60_000);

  it('holds in memory only live partitions: 100,000 partitions written then deleted leave nothing behind', async () => {
    const topic = uniqueTopic('offsets');
    const store = new KafkaOffsetStore({ kafka, topic, admin, logger: captureLogger(), partitions: 3 });
    stores.push(store);
    await store.start();
    const n = 100_000;
    const batch = 10_000;
    const partition = (i: number) => ({ file: `/data/in/file-${i}.csv` });
    for (let from = 0; from < n; from += batch) {
      await store.write(
        'files',
        Array.from({ length: batch }, (_, k) => ({ partition: partition(from + k), offset: { line: from + k } })),
      );
    }
    expect(await store.connectors()).toEqual(['files']);
    expect(store.sizes()).toEqual({ partitions: n, keyTexts: n, tombstones: 0 });
    for (let from = 0; from < n; from += batch) {
      await store.write(
        'files',
        Array.from({ length: batch }, (_, k) => ({ partition: partition(from + k), offset: null })),
      );
    }
    expect(await store.connectors()).toEqual([]);
    expect(store.sizes()).toEqual({ partitions: 0, keyTexts: 0, tombstones: 0 });
    // A store reading the whole history drops the tombstones once it has read to the end.
    const fresh = new KafkaOffsetStore({ kafka, topic, admin, logger: captureLogger() });
    stores.push(fresh);
    await fresh.start();
    expect(fresh.sizes()).toEqual({ partitions: 0, keyTexts: 0, tombstones: 0 });
  }, 180_000);
});

describeKafka('KafkaOffsetStore with a broker that goes away', () => {
  it('keeps working after the broker is stopped and started again', async () => {
    const broker = await startOwnBroker();
    const kafka = testKafka(broker.bootstrapServers, 'bounce-test');
    const store = new KafkaOffsetStore({
      kafka,
      topic: 'offsets',
      partitions: 3,
      logger: captureLogger(),
      readTimeoutMs: 60_000,
    });
    try {
      await store.start();
      await store.write('c', [{ partition: { p: 1 }, offset: { n: 1 } }]);

      await broker.stop();
      // A flush while the broker is away either waits for it (kafkajs retries) or fails retriably.
      const during = store.write('c', [{ partition: { p: 1 }, offset: { n: 2 } }]).then(
        () => 'ok',
        (e: unknown) => (isTributaryError(e) ? e.code : String(e)),
      );
      await new Promise((r) => setTimeout(r, 2000));
      await broker.start();
      expect(['ok', 'OFFSET_FLUSH_FAILED']).toContain(await during);

      await store.write('c', [{ partition: { p: 1 }, offset: { n: 3 } }]);
      expect(await store.read('c')).toEqual([{ partition: { p: 1 }, offset: { n: 3 } }]);
    } finally {
      await store.stop();
    }
  });
});

function sortByP<T extends { partition: { [k: string]: unknown } }>(entries: T[]): T[] {
  return [...entries].sort((a, b) => Number(a.partition.p) - Number(b.partition.p));
}
