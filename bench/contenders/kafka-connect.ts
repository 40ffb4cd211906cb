/**
 * Apache Kafka Connect standalone (`org.apache.kafka.connect.cli.ConnectStandalone`) running
 * `FileStreamSourceConnector` with one task, started as `connect-standalone.sh` would start it:
 * the same JVM options (`kafka-run-class.sh`'s G1 settings, `-Xms256M -Xmx2G`), log4j2 at INFO
 * to a file, plugins found on the classpath (default `plugin.discovery=hybrid_warn`), the REST
 * listener on a free port. Offsets go to a file (standalone's `FileOffsetBackingStore`), which
 * is the store Tributary's standalone worker uses too.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BenchSettings } from '../lib/settings.js';
import { type Contender, type Launch, properties, type RunContext, sumOfOffsets } from './contender.js';
import { readPosition, topicPosition } from './tributary.js';

/** `kafka-run-class.sh`'s KAFKA_JVM_PERFORMANCE_OPTS, shared by every Java tool the scripts start. */
export const KAFKA_RUN_CLASS_OPTIONS: readonly string[] = [
  '-server',
  '-XX:+UseG1GC',
  '-XX:MaxGCPauseMillis=20',
  '-XX:InitiatingHeapOccupancyPercent=35',
  '-XX:+ExplicitGCInvokesConcurrent',
  '-XX:MaxInlineLevel=15',
  '-Djava.awt.headless=true',
];

/** JVM options of `connect-standalone.sh` (KAFKA_HEAP_OPTS) with `kafka-run-class.sh`'s. */
export const CONNECT_JVM_OPTIONS: readonly string[] = ['-Xms256M', '-Xmx2G', ...KAFKA_RUN_CLASS_OPTIONS];

/** log4j2 at INFO to stdout, like the distribution's connect-log4j2.yaml (minus the file appender). */
export const LOG4J2_INFO = [
  'status = warn',
  'appender.out.type = Console',
  'appender.out.name = OUT',
  'appender.out.layout.type = PatternLayout',
  'appender.out.layout.pattern = [%d] %p %m (%c)%n',
  'rootLogger.level = INFO',
  'rootLogger.appenderRef.out.ref = OUT',
  '',
].join('\n');

/**
 * @param xmx A smaller `-Xmx` than the scripts' 2G (a second contender, `connect-xmx`), or undefined for the defaults.
 */
export function kafkaConnect(settings: BenchSettings, java: string, libs: string, version: string, xmx?: string): Contender {
  const p = settings.producer;
  const jvm = xmx === undefined ? CONNECT_JVM_OPTIONS : CONNECT_JVM_OPTIONS.map((o) => (o === '-Xmx2G' ? `-Xmx${xmx}` : o));
  const producer = {
    'producer.acks': p.acks,
    'producer.enable.idempotence': p.idempotence,
    'producer.max.in.flight.requests.per.connection': p.maxInFlight,
    'producer.compression.type': p.compression,
    'producer.linger.ms': p.lingerMs,
    'producer.batch.size': p.connectBatchBytes,
  };
  return {
    id: xmx === undefined ? 'connect' : 'connect-xmx',
    label: `Kafka Connect ${version}${xmx === undefined ? '' : ` -Xmx${xmx}`}`,
    sendsLines: true,
    settings: [
      `Kafka Connect ${version} standalone, FileStreamSourceConnector, tasks.max=1, batch.size=${settings.sourceBatchLines}`,
      "key.converter and value.converter: org.apache.kafka.connect.storage.StringConverter (the line's UTF-8 bytes, null key)",
      `offset.storage.file.filename (FileOffsetBackingStore), offset.flush.interval.ms=${settings.flushIntervalMs}`,
      Object.entries(producer)
        .map(([k, v]) => `${k}=${v}`)
        .join(', '),
      `JVM: ${jvm.join(' ')}${xmx === undefined ? ' (connect-standalone.sh defaults)' : ` (connect-standalone.sh defaults but -Xmx${xmx})`}; log4j2 INFO`,
    ],
    async launch(run: RunContext): Promise<Launch> {
      const offsetsFile = join(run.dir, 'connect.offsets');
      const worker = join(run.dir, 'worker.properties');
      const connector = join(run.dir, 'connector.properties');
      const log4j = join(run.dir, 'log4j2.properties');
      await writeFile(
        worker,
        properties({
          'bootstrap.servers': run.bootstrap,
          'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
          'value.converter': 'org.apache.kafka.connect.storage.StringConverter',
          'offset.storage.file.filename': offsetsFile,
          'offset.flush.interval.ms': settings.flushIntervalMs,
          listeners: `http://127.0.0.1:${run.restPort}`,
          ...producer,
        }),
      );
      const connectors: string[] = [];
      for (let i = 1; i <= run.copies; i++) {
        const file = run.copies === 1 ? connector : join(run.dir, `connector-${i}.properties`);
        await writeFile(
          file,
          properties({
            name: run.copies === 1 ? 'bench-file-source' : `bench-file-source-${i}`,
            'connector.class': 'org.apache.kafka.connect.file.FileStreamSourceConnector',
            'tasks.max': 1,
            file: run.inputFile,
            topic: run.topic,
            'batch.size': settings.sourceBatchLines,
          }),
        );
        connectors.push(file);
      }
      await writeFile(log4j, LOG4J2_INFO);
      return {
        command: java,
        args: [
          ...jvm,
          `-Dlog4j2.configurationFile=${log4j}`,
          '-cp',
          `${libs}/*`,
          'org.apache.kafka.connect.cli.ConnectStandalone',
          worker,
          ...connectors,
        ],
        kind: 'worker',
        committedPosition: () => sumOfOffsets(offsetsFile),
      };
    },
  };
}

/**
 * Kafka Connect's distributed worker (`ConnectDistributed`, a one-worker cluster) with
 * `exactly.once.source.support=enabled`, running the same FileStreamSourceConnector job: KIP-618
 * needs the distributed worker. The connector is created over REST once the worker answers
 * (that time counts, as the standalone worker's connector start does); offsets, configs and
 * status live in topics of this run.
 */
export function kafkaConnectExactlyOnce(settings: BenchSettings, java: string, libs: string, version: string): Contender {
  return {
    id: 'connect-eos',
    label: `Kafka Connect ${version}, exactly-once`,
    sendsLines: true,
    transactional: true,
    settings: [
      `Kafka Connect ${version} distributed (one worker), exactly.once.source.support=enabled, FileStreamSourceConnector created over REST, tasks.max=1, batch.size=${settings.sourceBatchLines}, transaction.boundary=poll`,
      "key.converter and value.converter: org.apache.kafka.connect.storage.StringConverter (the line's UTF-8 bytes, null key)",
      `offsets, configs and status in topics of the run (replication factor 1), offset.flush.interval.ms=${settings.flushIntervalMs}; the task's producer is Connect's transactional one (acks=all, idempotent)`,
      'the harness stops the worker once the committed offsets reach the end of the file (the topic end offsets count commit markers); stop + commit includes that wait',
      `JVM: ${CONNECT_JVM_OPTIONS.join(' ')} (connect-distributed.sh defaults); log4j2 INFO`,
    ],
    async launch(run: RunContext): Promise<Launch> {
      const worker = join(run.dir, 'worker.properties');
      const log4j = join(run.dir, 'log4j2.properties');
      const offsetsTopic = `${run.topic}-connect-offsets`;
      await writeFile(
        worker,
        properties({
          'bootstrap.servers': run.bootstrap,
          'group.id': `${run.topic}-connect`,
          'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
          'value.converter': 'org.apache.kafka.connect.storage.StringConverter',
          'offset.storage.topic': offsetsTopic,
          'offset.storage.replication.factor': 1,
          'offset.storage.partitions': 1,
          'config.storage.topic': `${run.topic}-connect-configs`,
          'config.storage.replication.factor': 1,
          'status.storage.topic': `${run.topic}-connect-status`,
          'status.storage.replication.factor': 1,
          'status.storage.partitions': 1,
          'offset.flush.interval.ms': settings.flushIntervalMs,
          'exactly.once.source.support': 'enabled',
          listeners: `http://127.0.0.1:${run.restPort}`,
        }),
      );
      await writeFile(log4j, LOG4J2_INFO);
      void createWhenUp(run.restPort, {
        name: 'bench-file-source',
        config: {
          'connector.class': 'org.apache.kafka.connect.file.FileStreamSourceConnector',
          'tasks.max': '1',
          file: run.inputFile,
          topic: run.topic,
          'batch.size': String(settings.sourceBatchLines),
          'exactly.once.support': 'required',
          'transaction.boundary': 'poll',
        },
      });
      return {
        command: java,
        args: [
          ...CONNECT_JVM_OPTIONS,
          `-Dlog4j2.configurationFile=${log4j}`,
          '-cp',
          `${libs}/*`,
          'org.apache.kafka.connect.cli.ConnectDistributed',
          worker,
        ],
        kind: 'worker',
        committedPosition: () => topicPosition(run.bootstrap, offsetsTopic),
        committedPositionNow: () => readPosition(run.bootstrap, offsetsTopic),
      };
    },
  };
}

/** POSTs the connector once the worker's REST API answers (for two minutes at most). */
async function createWhenUp(port: number, body: object): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/connectors`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (res.status === 201 || res.status === 409) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
