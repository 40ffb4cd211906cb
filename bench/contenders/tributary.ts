/**
 * Tributary's standalone worker (the built CLI, `node tributary-cli.js standalone ...`) running
 * `examples/file-source` with one task and `value.converter=string`, so it sends exactly the
 * bytes FileStreamSource sends with the StringConverter. The REST API is on, as Kafka Connect's
 * is. Producer settings are Kafka Connect's source-producer semantics (acks=all, one in flight,
 * idempotence off) with Tributary's own batching.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Kafka, logLevel } from '../../src/kafka/kafkajs-fixes.js';
import { KafkaOffsetStore } from '../../src/storage/kafka-offset-store.js';
import type { BenchSettings } from '../lib/settings.js';
import { type Contender, type Launch, properties, type RunContext, sumOfOffsets } from './contender.js';

/** The worker properties every Tributary run shares (also used by the heartbeat run). */
export function tributaryWorkerProperties(
  settings: BenchSettings,
  run: Pick<RunContext, 'bootstrap' | 'restPort'>,
  offsetsFile: string,
): Record<string, string | number | boolean> {
  const p = settings.producer;
  return {
    'bootstrap.servers': run.bootstrap,
    'key.converter': 'string',
    'value.converter': 'string',
    'offset.storage.file.filename': offsetsFile,
    'offset.flush.interval.ms': settings.flushIntervalMs,
    listeners: `http://127.0.0.1:${run.restPort}`,
    'log.level': 'info',
    'producer.acks': p.acks,
    'producer.enable.idempotence': p.idempotence,
    'producer.max.in.flight.requests.per.connection': p.maxInFlight,
    'producer.compression.type': p.compression,
    'producer.linger.ms': p.lingerMs,
    'producer.batch.size': p.tributaryBatchBytes,
    'producer.batch.max.records': p.tributaryBatchRecords,
    ...settings.tributarySet,
  };
}

export function tributary(
  settings: BenchSettings,
  cli: string,
  fileSource: string,
  nodeOptions: readonly string[] = [],
  librdkafka = false,
  exactlyOnce = false,
): Contender {
  const p = settings.producer;
  return {
    id: exactlyOnce
      ? librdkafka
        ? 'tributary-librdkafka-eos'
        : 'tributary-eos'
      : librdkafka
        ? 'tributary-librdkafka'
        : 'tributary',
    label: `Tributary${librdkafka ? ', sender=librdkafka' : ''}${exactlyOnce ? ', exactly-once' : ''}`,
    sendsLines: true,
    transactional: exactlyOnce,
    settings: [
      `Tributary standalone (bundled from ${settings.tributaryFrom ?? 'src/'} like dist/cli/main.js), examples/file-source, tasks.max=1, batch.size=${settings.sourceBatchLines}`,
      "key.converter=string, value.converter=string (the line's UTF-8 bytes, null key)",
      `offset.storage.file.filename (FileOffsetStore), offset.flush.interval.ms=${settings.flushIntervalMs}`,
      `producer.acks=${p.acks}, producer.enable.idempotence=${p.idempotence}, producer.max.in.flight.requests.per.connection=${p.maxInFlight}, ` +
        `producer.compression.type=${p.compression}, producer.linger.ms=${p.lingerMs}, producer.batch.size=${p.tributaryBatchBytes}, ` +
        `producer.batch.max.records=${p.tributaryBatchRecords}`,
      ...(librdkafka
        ? ['sender=librdkafka: @confluentinc/kafka-javascript (librdkafka) instead of kafkajs, the same producer.* settings']
        : []),
      ...(exactlyOnce
        ? [
            'exactly.once.source.support=enabled, transaction.boundary=poll: one Kafka transaction per poll round with the offsets in a compacted offsets topic (not the file); the transactional producer is idempotent with acks=all',
            'the topic end offsets the harness watches include one commit marker per transaction, so "all records in the topic" is seen up to two transactions early: the harness then waits for the committed offsets to reach the end of the file before it stops the worker (stop + commit includes that wait and its reads of the offsets topic). Every record is read back (read_committed) and checked',
          ]
        : []),
      `Node ${process.version}${nodeOptions.length > 0 ? ` ${nodeOptions.join(' ')}` : ''}, default heap; pino log at info`,
      ...(Object.keys(settings.tributarySet).length > 0
        ? [
            `also: ${Object.entries(settings.tributarySet)
              .map(([k, v]) => `${k}=${v}`)
              .join(', ')}`,
          ]
        : []),
    ],
    async launch(run: RunContext): Promise<Launch> {
      const offsetsFile = join(run.dir, 'tributary-offsets.json');
      const worker = join(run.dir, 'worker.properties');
      const connector = join(run.dir, 'connector.properties');
      const offsetsTopic = `${run.topic}-offsets`;
      const base = tributaryWorkerProperties(settings, run, offsetsFile);
      const { 'offset.storage.file.filename': _file, ...withoutFile } = base;
      const workerProperties = exactlyOnce
        ? {
            ...withoutFile,
            'offset.storage.topic': offsetsTopic,
            'offset.storage.partitions': 1,
            'exactly.once.source.support': 'enabled',
          }
        : base;
      await writeFile(worker, properties(librdkafka ? { ...workerProperties, sender: 'librdkafka' } : workerProperties));
      // One connector per copy of the input (the tasks series), each its own task and producer.
      const connectors: string[] = [];
      for (let i = 1; i <= run.copies; i++) {
        const file = run.copies === 1 ? connector : join(run.dir, `connector-${i}.properties`);
        await writeFile(
          file,
          properties({
            name: run.copies === 1 ? 'bench-file-source' : `bench-file-source-${i}`,
            'connector.class': `${fileSource}#FileSourceConnector`,
            'tasks.max': 1,
            file: run.inputFile,
            topic: run.topic,
            'batch.size': settings.sourceBatchLines,
          }),
        );
        connectors.push(file);
      }
      return {
        command: process.execPath,
        args: [...nodeOptions, cli, 'standalone', worker, ...connectors],
        kind: 'worker',
        committedPosition: () => (exactlyOnce ? topicPosition(run.bootstrap, offsetsTopic) : sumOfOffsets(offsetsFile)),
        ...(exactlyOnce ? { committedPositionNow: () => readPosition(run.bootstrap, offsetsTopic) } : {}),
      };
    },
  };
}

/**
 * The byte position committed in an offsets topic (read_committed), as the next run would resume
 * from. Read again until two reads a second apart agree (at most 5 reads): a transaction's commit
 * markers land on the topic just after its commit returns, so a read right after the worker's exit
 * can still end before the last one. A commit that never happened reads the same both times.
 */
export async function topicPosition(bootstrap: string, topic: string): Promise<number | undefined> {
  let last = await readPosition(bootstrap, topic);
  for (let i = 0; i < 4; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    const next = await readPosition(bootstrap, topic);
    if (next === last) return next;
    last = next;
  }
  return last;
}

/** One read of the position committed in an offsets topic (read_committed). */
export async function readPosition(bootstrap: string, topic: string): Promise<number | undefined> {
  const kafka = new Kafka({ brokers: bootstrap.split(','), logLevel: logLevel.NOTHING });
  const store = new KafkaOffsetStore({ kafka, topic, logger: { warn() {} } });
  await store.start();
  try {
    const entries = await store.read('bench-file-source');
    const position = entries[0]?.offset?.position;
    return typeof position === 'number' ? position : undefined;
  } finally {
    await store.stop();
  }
}
