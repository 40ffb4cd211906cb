/**
 * A kafkajs client whose producers run on worker threads of their own, for {@link KafkajsSender}.
 *
 * kafkajs is plain JavaScript and spends most of a record's time encoding the Produce request
 * (about 3.6 of the 6.7 µs per record a bare kafkajs loop costs, docs/benchmarks.md). In the
 * same thread as the task, that work and the task's (reading the source, building, converting
 * and tracking records) take turns on one core. Here the producer lives on a thread of its own
 * and the sender's batches cross over as one transferred ArrayBuffer per `sendBatch`, so the two
 * run side by side. Everything else of the sender (batching, re-sends, stalls, the
 * acknowledgement of each record) stays on the main thread, unchanged: the thread is only the
 * kafkajs producer behind {@link KafkajsProducerLike}.
 *
 * What crosses back: each call's result, the partition the retry-stable partitioner picked for
 * each message (written onto the sender's own messages, as the partitioner does in-process),
 * errors with the fields Tributary reads (`name`, `retriable`, `retryCount`, causes), kafkajs's
 * log lines (to the worker's logCreator) and kafkajs rejections no one handled. A thread that
 * dies fails every call waiting on it and every later one, with the reason: never a silent loss.
 */
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { logCreator, ProducerBatch, ProducerConfig, RecordMetadata } from 'kafkajs';
import type { ProducerThreadData } from './kafkajs-producer-thread.js';
import type { KafkajsLike, KafkajsProducerLike } from './kafkajs-sender.js';
import {
  applyPartitions,
  deserializeError,
  type FromThread,
  type PackedTopic,
  packTopics,
  type ToThread,
} from './kafkajs-thread-protocol.js';
import { retryStablePartitioner } from './retry-stable-partitioner.js';
import type { ResolvedKafkaSecurity } from './security-config.js';

/** What {@link ThreadedKafkajs} needs: the client's settings, and where its reports go. */
export interface ThreadedKafkajsOptions {
  /** kafkajs client settings that can be cloned to a thread (no functions). */
  readonly client: ProducerThreadData['client'];
  /** TLS and SASL, resolved; the thread builds kafkajs's options from them. */
  readonly security?: ResolvedKafkaSecurity | undefined;
  /** Where a relative OAUTHBEARER token provider path is resolved from (default: the working directory). */
  readonly baseDir?: string | undefined;
  /** Receives the thread's kafkajs log lines, as a `logCreator` given to kafkajs would. */
  readonly logCreator?: logCreator | undefined;
  /** Receives kafkajs rejections no one handled on the thread (see installKafkajsRejectionGuard). */
  readonly onRejection?: ((error: Error) => void) | undefined;
  /** The thread's script, for tests; default: kafkajs-producer-thread beside this module. */
  readonly threadScript?: URL | undefined;
}

/**
 * A {@link KafkajsLike} whose every producer is a kafkajs producer on a worker thread of its own.
 *
 * @example
 * ```ts
 * import { KafkajsSender } from './kafkajs-sender.js';
 * import { resolveProducerConfig } from './producer-config.js';
 *
 * const config = resolveProducerConfig({}, { name: 'orders' }, { task: 0 });
 * const kafka = new ThreadedKafkajs({ client: { brokers: ['127.0.0.1:9092'] } });
 * const sender = new KafkajsSender({ kafka, config });
 * await sender.connect();
 * ```
 */
export class ThreadedKafkajs implements KafkajsLike {
  constructor(private readonly options: ThreadedKafkajsOptions) {}

  /**
   * A producer (not started: `connect()` starts its thread).
   *
   * @throws When `config` has a partitioner other than {@link retryStablePartitioner} (functions do not cross threads).
   */
  producer(config: ProducerConfig): KafkajsProducerLike {
    const { createPartitioner, ...rest } = config;
    if (createPartitioner !== undefined && createPartitioner !== retryStablePartitioner) {
      throw new Error(
        'ThreadedKafkajs: a producer thread uses retryStablePartitioner; another createPartitioner cannot cross to it',
      );
    }
    return new ThreadedProducer(this.options, rest);
  }
}

interface Waiting {
  readonly topics: readonly PackedTopic[];
  readonly resolve: (result: RecordMetadata[]) => void;
  readonly reject: (error: Error) => void;
}

/** The script of the thread: the built file beside this bundle, else the source beside this module. */
function threadScript(): URL {
  for (const name of ['./kafkajs-producer-thread.js', './kafkajs-producer-thread.ts']) {
    const url = new URL(name, import.meta.url);
    if (existsSync(url)) return url;
  }
  throw new Error(
    `The kafkajs producer thread's script is missing beside ${import.meta.url} (kafkajs-producer-thread.js): the installation is incomplete; set sender.thread=false in the worker config to run the producer on the main thread`,
  );
}

/** Calls a one-in-flight producer thread takes at once: one on the wire, one waiting behind it. */
const QUEUE_DEPTH = 2;

/**
 * Starts the thread. Run from TypeScript sources (tests, `npm run tributary`), where the main
 * thread has tsx's loader from `node --import tsx`, which worker threads do not inherit: the
 * thread registers tsx itself before it loads the script.
 */
function startThread(script: URL, data: ProducerThreadData): Worker {
  if (!script.pathname.endsWith('.ts')) return new Worker(script, { workerData: data });
  const tsx = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(script.href)}); })`;
  return new Worker(code, { eval: true, workerData: data });
}

class ThreadedProducer implements KafkajsProducerLike {
  /**
   * With one request in flight, the thread runs calls one after another and takes the next while
   * one is out (see {@link KafkajsProducerLike.queueDepth}); otherwise calls run side by side, as
   * in kafkajs.
   */
  readonly queueDepth: number | undefined;
  private worker: Worker | undefined;
  /** The thread stopped taking calls after a failure; `resume` once every call made was answered. */
  private halted = false;
  /** Why the thread is gone, once it is: every call from then on fails with it. */
  private gone: Error | undefined;
  private nextId = 0;
  private readonly waiting = new Map<number, Waiting>();
  private connecting: { resolve: () => void; reject: (e: Error) => void } | undefined;
  private disconnecting: Promise<void> | undefined;
  private resolveDisconnect: ((failure: Error | undefined) => void) | undefined;
  private readonly log: ReturnType<logCreator> | undefined;
  /** Threads of failed connects, ended on purpose: what they still report is ignored. */
  private readonly retired = new WeakSet<Worker>();

  constructor(
    private readonly options: ThreadedKafkajsOptions,
    private readonly config: Omit<ProducerConfig, 'createPartitioner'>,
  ) {
    this.log = options.logCreator?.(options.client.logLevel ?? 0);
    this.queueDepth = config.maxInFlightRequests === 1 ? QUEUE_DEPTH : undefined;
  }

  connect(): Promise<void> {
    if (this.worker !== undefined || this.gone !== undefined || this.disconnecting !== undefined) {
      return Promise.reject(
        new Error('ThreadedKafkajs: connect() on a producer that is connected, disconnected, or whose thread ended'),
      );
    }
    const data: ProducerThreadData = {
      client: this.options.client,
      security: this.options.security,
      baseDir: this.options.baseDir ?? process.cwd(),
      producer: this.config,
    };
    const worker = startThread(this.options.threadScript ?? threadScript(), data);
    this.worker = worker;
    worker.on('message', (m: FromThread) => {
      if (!this.retired.has(worker)) this.onMessage(m);
    });
    worker.on('error', (e) => {
      if (!this.retired.has(worker)) this.end(new Error(`the kafkajs producer thread failed: ${e.message}`, { cause: e }));
    });
    worker.on('exit', (code) => {
      if (!this.retired.has(worker)) this.end(new Error(`the kafkajs producer thread exited (code ${code})`));
    });
    return new Promise<void>((resolve, reject) => {
      this.connecting = { resolve, reject };
      this.post({ op: 'connect' });
    });
  }

  sendBatch(batch: ProducerBatch): Promise<RecordMetadata[]> {
    const worker = this.worker;
    if (this.gone !== undefined) {
      // Never reached a thread: the sender sends it again on a fresh producer.
      const notSent = new Error(`not sent: ${this.gone.message}`, { cause: this.gone });
      return Promise.reject(Object.assign(notSent, { notAttempted: true, producerGone: true }));
    }
    if (worker === undefined || this.disconnecting !== undefined) {
      return Promise.reject(new Error('ThreadedKafkajs: sendBatch on a producer that is not connected'));
    }
    const topics = (batch.topicMessages ?? []) as unknown as readonly PackedTopic[];
    let packed: ArrayBuffer;
    try {
      packed = packTopics(topics);
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
    const id = this.nextId++;
    if (this.halted && this.waiting.size === 0) {
      // Every call made before was answered: none can overtake this one any more.
      this.halted = false;
      this.post({ op: 'resume' });
    }
    return new Promise<RecordMetadata[]>((resolve, reject) => {
      this.waiting.set(id, { topics, resolve, reject });
      this.post({ op: 'send', id, batch: packed, acks: batch.acks, timeout: batch.timeout, compression: batch.compression }, [
        packed,
      ]);
    });
  }

  disconnect(): Promise<void> {
    if (this.disconnecting !== undefined) return this.disconnecting;
    const worker = this.worker;
    if (worker === undefined || this.gone !== undefined) {
      this.disconnecting = Promise.resolve();
      return this.disconnecting;
    }
    this.disconnecting = new Promise<Error | undefined>((resolve) => {
      this.resolveDisconnect = resolve;
      this.post({ op: 'disconnect' });
    }).then(async (failure) => {
      await worker.terminate();
      if (failure !== undefined) throw failure;
    });
    return this.disconnecting;
  }

  private post(message: ToThread, transfer?: ArrayBuffer[]): void {
    try {
      this.worker?.postMessage(message, transfer);
    } catch (e) {
      this.end(
        new Error(`could not reach the kafkajs producer thread: ${e instanceof Error ? e.message : String(e)}`, { cause: e }),
      );
      // It may still run: it must not keep the process alive.
      void this.worker?.terminate();
    }
  }

  private onMessage(m: FromThread): void {
    switch (m.op) {
      case 'connected':
        this.connecting?.resolve();
        this.connecting = undefined;
        return;
      case 'connect-failed': {
        // Nothing is connected: the thread goes (it would keep the process alive), and a later
        // connect() starts a new one, as a kafkajs producer may be connected again.
        const worker = this.worker;
        this.worker = undefined;
        if (worker !== undefined) {
          this.retired.add(worker);
          void worker.terminate();
        }
        this.connecting?.reject(deserializeError(m.error));
        this.connecting = undefined;
        // A disconnect() made meanwhile has nothing left to wait for: the retired thread's answer is ignored.
        this.settleDisconnect(undefined);
        return;
      }
      case 'sent':
      case 'send-failed': {
        const w = this.waiting.get(m.id);
        if (w === undefined) return;
        this.waiting.delete(m.id);
        applyPartitions(w.topics, m.partitions);
        if (m.op === 'sent') {
          // The thread halts after a response without some partition's offset, as after a failure.
          if (m.halted) this.halted = true;
          w.resolve(m.result as RecordMetadata[]);
        } else {
          if (this.queueDepth !== undefined) this.halted = true;
          w.reject(deserializeError(m.error));
        }
        return;
      }
      case 'disconnected':
        // A failed disconnect still ends the thread (kafkajs's sockets go with it), and is reported.
        this.settleDisconnect(m.error === undefined ? undefined : deserializeError(m.error));
        return;
      case 'log':
        this.log?.({ namespace: m.namespace, level: m.level, label: m.label, log: m.log as never });
        return;
      case 'rejection':
        this.options.onRejection?.(deserializeError(m.error));
        return;
    }
  }

  /** The thread is gone: every call waiting on it fails with `reason`, and so does every later one. */
  private end(reason: Error): void {
    if (this.gone !== undefined) return;
    // The sender makes a fresh producer (thread) after this, idempotent or not (KafkajsProducerLike).
    Object.assign(reason, { producerGone: true });
    // An exit after disconnect() is the expected end; nothing waits then.
    this.gone = reason;
    this.connecting?.reject(reason);
    this.connecting = undefined;
    for (const w of this.waiting.values()) w.reject(reason);
    this.waiting.clear();
    this.settleDisconnect(undefined);
  }

  private settleDisconnect(failure: Error | undefined): void {
    const resolve = this.resolveDisconnect;
    this.resolveDisconnect = undefined;
    resolve?.(failure);
  }
}
