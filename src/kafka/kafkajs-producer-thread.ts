/**
 * The body of a kafkajs producer thread (see {@link ./kafkajs-thread.ts}): one kafkajs producer,
 * driven by the main thread's `connect`, `send` and `disconnect` messages. kafkajs's encoding of
 * Produce requests, its partitioner and its sockets run here, beside the task's own work on the
 * main thread. Everything the producer reports goes back as a message: results with the
 * partitions the partitioner picked, errors with their kafkajs fields, kafkajs's log lines and
 * rejections no one handled.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { CompressionTypes, KafkaConfig, ProducerConfig, RecordMetadata, TopicMessages } from 'kafkajs';
import { installKafkajsRejectionGuard } from './install-kafkajs-rejection-guard.js';
import { kafkajsSecurityOptions } from './kafka-client-security.js';
import { KAFKAJS_UNFIXED, Kafka, kafkajsFixes, logLevel } from './kafkajs-fixes.js';
import { type FromThread, partitionsOf, serializeError, type ToThread, unpackTopics } from './kafkajs-thread-protocol.js';
import { indexResponse, unacknowledged } from './produce-response.js';
import { retryStablePartitioner } from './retry-stable-partitioner.js';
import type { ResolvedKafkaSecurity } from './security-config.js';

/** What the main thread gives the thread at its start: all of it structured-cloneable. */
export interface ProducerThreadData {
  /** kafkajs client settings without functions (no logCreator, no socketFactory, no sasl/ssl). */
  readonly client: Omit<KafkaConfig, 'logCreator' | 'sasl' | 'ssl' | 'socketFactory'>;
  /** Turned into kafkajs's `ssl`/`sasl` here; an OAUTHBEARER token provider module is loaded by this thread. */
  readonly security: ResolvedKafkaSecurity | undefined;
  /** Where relative token provider paths are resolved from. */
  readonly baseDir: string;
  /** Producer settings without `createPartitioner`: the thread always uses {@link retryStablePartitioner}. */
  readonly producer: Omit<ProducerConfig, 'createPartitioner'>;
}

const port = parentPort;
if (port === null) throw new Error('kafkajs-producer-thread runs as a worker thread (node:worker_threads), not on its own');
const data = workerData as ProducerThreadData;
const post = (message: FromThread, transfer?: ArrayBuffer[]): void => port.postMessage(message, transfer);

installKafkajsRejectionGuard((e) => post({ op: 'rejection', error: serializeError(e) }));

const kafka = new Kafka({
  ...data.client,
  ...(data.security === undefined ? {} : kafkajsSecurityOptions(data.security, data.baseDir)),
  logCreator:
    () =>
    ({ namespace, level, label, log }: { namespace: string; level: logLevel; label: string; log: Record<string, unknown> }) => {
      try {
        post({ op: 'log', level, namespace, label, log });
      } catch {
        // A field that cannot be cloned: send the line as JSON can show it.
        post({ op: 'log', level, namespace, label, log: JSON.parse(JSON.stringify(log)) as Record<string, unknown> });
      }
    },
});
const producer = kafka.producer({ ...data.producer, createPartitioner: retryStablePartitioner });
// This thread loaded kafkajs anew, with the fixes of kafkajs-fixes.ts or (a warning) without them.
{
  const unfixed = kafkajsFixes.notApplied.length > 0;
  post({
    op: 'log',
    level: unfixed ? logLevel.WARN : logLevel.DEBUG,
    namespace: 'Tributary',
    label: unfixed ? 'WARN' : 'DEBUG',
    log: {
      message: unfixed
        ? `${KAFKAJS_UNFIXED} (producer thread): ${kafkajsFixes.notApplied.join('; ')}`
        : `kafkajs fixes in force on the producer thread: ${kafkajsFixes.applied.join(', ')}`,
      timestamp: new Date().toISOString(),
    },
  });
}
/**
 * One request in flight (`maxInFlightRequests: 1`): calls run one after another in arrival
 * order, so the main thread can hand over the next batch while one is on the wire. After a call
 * fails, or resolves without an offset for one of its partitions (tulios/kafkajs#1303), no later
 * call goes out until the main thread, having heard of every call it made, says `resume`: they
 * are answered "not attempted", so none overtakes the re-send of the earlier one.
 */
const serial = data.producer.maxInFlightRequests === 1;
interface Job {
  readonly id: number;
  readonly topicMessages: ReturnType<typeof unpackTopics>;
  readonly options: { acks?: number; timeout?: number; compression?: CompressionTypes };
}
const queue: Job[] = [];
let running = false;
let halted = false;
/** Set by `disconnect`: calls still queued are answered "not attempted" instead of written. */
let closing = false;

const done = (m: FromThread & { partitions: Int32Array }): void => post(m, [m.partitions.buffer as ArrayBuffer]);
const notAttempted = (job: Job): void =>
  done({
    op: 'send-failed',
    id: job.id,
    error: serializeError(Object.assign(new Error('not sent: an earlier batch failed first'), { notAttempted: true })),
    partitions: partitionsOf(job.topicMessages),
  });

function call(job: Job): Promise<unknown[]> {
  try {
    // Header values as the sender gave them (kafkajs-thread-protocol.ts); kafkajs's types are narrower.
    return producer.sendBatch({ topicMessages: job.topicMessages as TopicMessages[], ...job.options });
  } catch (e) {
    return Promise.reject(e);
  }
}

function runNext(): void {
  if (running) return;
  const job = queue.shift();
  if (job === undefined) return;
  if (halted || closing) {
    notAttempted(job);
    runNext();
    return;
  }
  running = true;
  call(job).then(
    (result) => {
      const missing =
        job.options.acks !== 0 && unacknowledged(job.topicMessages, indexResponse(result as RecordMetadata[])).length > 0;
      if (missing) halted = true;
      done({ op: 'sent', id: job.id, result, partitions: partitionsOf(job.topicMessages), halted: missing });
      running = false;
      runNext();
    },
    (e: unknown) => {
      halted = true;
      done({ op: 'send-failed', id: job.id, error: serializeError(e), partitions: partitionsOf(job.topicMessages) });
      running = false;
      runNext();
    },
  );
}

port.on('message', (message: ToThread) => {
  switch (message.op) {
    case 'connect':
      producer.connect().then(
        () => post({ op: 'connected' }),
        (e: unknown) => post({ op: 'connect-failed', error: serializeError(e) }),
      );
      return;
    case 'resume':
      halted = false;
      return;
    case 'send': {
      const job: Job = {
        id: message.id,
        topicMessages: unpackTopics(message.batch),
        options: {
          ...(message.acks === undefined ? {} : { acks: message.acks }),
          ...(message.timeout === undefined ? {} : { timeout: message.timeout }),
          ...(message.compression === undefined ? {} : { compression: message.compression as CompressionTypes }),
        },
      };
      if (closing) {
        notAttempted(job);
        return;
      }
      if (serial) {
        queue.push(job);
        runNext();
        return;
      }
      call(job).then(
        (result) => done({ op: 'sent', id: job.id, result, partitions: partitionsOf(job.topicMessages), halted: false }),
        (e: unknown) =>
          done({ op: 'send-failed', id: job.id, error: serializeError(e), partitions: partitionsOf(job.topicMessages) }),
      );
      return;
    }
    case 'disconnect':
      // The sender has failed every record it still waited for: none of them goes out now.
      closing = true;
      for (const job of queue.splice(0)) notAttempted(job);
      producer.disconnect().then(
        () => post({ op: 'disconnected' }),
        (e: unknown) => post({ op: 'disconnected', error: serializeError(e) }),
      );
      return;
  }
});
