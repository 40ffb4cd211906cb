/**
 * The kafkajs sender's producer: made with the sender's settings, connected, replaced by a
 * fresh one (a new producer id) after a give-up, and disconnected, with the sender's lifecycle
 * as one explicit state.
 */
import type { Producer, ProducerConfig } from 'kafkajs';
import { TributaryError } from '../api/errors.js';
import { asError } from './kafkajs-batch.js';
import type { ResolvedProducerConfig } from './producer-config.js';
import { retryStablePartitioner } from './retry-stable-partitioner.js';
import { backoffMs } from './send-retry-policy.js';

/** The part of a kafkajs `Producer` the sender uses. */
export type KafkajsProducerLike = Pick<Producer, 'connect' | 'disconnect' | 'sendBatch'> & {
  /**
   * Set by a producer that, with one request in flight, takes up to this many `sendBatch` calls
   * at once and writes them one after another in call order (the producer thread of
   * kafkajs-thread.ts): the sender then hands over the next batch while one is on the wire.
   * After a call fails, or resolves without an offset for some partition, such a producer
   * writes none of the calls made before it heard of every answer: it rejects them with an error
   * whose `notAttempted` is true, and the sender sends them again, in order, after the earlier one.
   */
  readonly queueDepth?: number | undefined;
};

/** The part of a kafkajs `Kafka` client the sender uses: a real `Kafka` instance fits. */
export interface KafkajsLike {
  producer(config: ProducerConfig): KafkajsProducerLike;
}

/**
 * How many times kafkajs itself retries one `sendBatch` call before handing the failure back to
 * the sender, which re-sends within `delivery.timeout.ms`. Small, so that the sender regains
 * control (and checks its deadline) every few seconds during an outage.
 */
export const KAFKAJS_RETRIES_PER_CALL = 5;

/** `idle` → `connecting` → `connected` → `closed`; `close` may come at any point. */
export type SenderLifecycle = 'idle' | 'connecting' | 'connected' | 'closed';

/** The kafkajs producer settings of a sender with `config`. */
export function kafkajsProducerConfig(config: ResolvedProducerConfig): ProducerConfig {
  return {
    createPartitioner: retryStablePartitioner,
    idempotent: config.idempotent,
    maxInFlightRequests: config.maxInFlight,
    metadataMaxAge: config.metadataMaxAgeMs,
    retry: {
      // With several batches in flight, a retry inside kafkajs could let a later batch
      // overtake an earlier one; the sender must see every failure to re-send in order.
      retries: config.maxInFlight > 1 ? 0 : Math.min(config.retries, KAFKAJS_RETRIES_PER_CALL),
      initialRetryTime: Math.max(1, config.retryBackoffMs),
      maxRetryTime: config.retryBackoffMaxMs,
      multiplier: 2,
      factor: 0.2,
    },
  };
}

/**
 * The sender's current producer and lifecycle state. After a give-up on a sent batch of an
 * idempotent producer the sender {@link want}s a replacement; nothing may be dispatched until
 * {@link replace} has connected a fresh producer.
 */
export class ProducerLifecycle {
  private lifecycle: SenderLifecycle = 'idle';
  private current: KafkajsProducerLike;
  private replacement: 'none' | 'wanted' | 'running' = 'none';
  private backoffTimer: NodeJS.Timeout | undefined;
  /** Ends the back-off between connection attempts of a fresh producer (on close). */
  private wake: (() => void) | undefined;
  private readonly options: ProducerConfig;

  constructor(
    private readonly kafka: KafkajsLike,
    private readonly config: ResolvedProducerConfig,
    private readonly onAsyncError: (error: Error) => void,
  ) {
    this.options = kafkajsProducerConfig(config);
    this.current = kafka.producer(this.options);
  }

  /** The lifecycle state. */
  get state(): SenderLifecycle {
    return this.lifecycle;
  }

  /** True once connected and until closed. */
  get connected(): boolean {
    return this.lifecycle === 'connected';
  }

  /** The producer to dispatch on. */
  get producer(): KafkajsProducerLike {
    return this.current;
  }

  /** `none`: dispatch on; `wanted`: replace once no call is out; `running`: a fresh producer is connecting. */
  get replacing(): 'none' | 'wanted' | 'running' {
    return this.replacement;
  }

  /**
   * Connects the producer.
   *
   * @returns True when connected; false when closed meanwhile (and then disconnected again).
   * @throws Whatever kafkajs's `connect()` rejects with, the state back at `idle`; or a
   *   `SEND_FAILED` error when not `idle`.
   */
  async connect(): Promise<boolean> {
    if (this.lifecycle !== 'idle') {
      throw new TributaryError('SEND_FAILED', `KafkajsSender.connect() called while ${this.lifecycle}`);
    }
    this.lifecycle = 'connecting';
    try {
      await this.current.connect();
    } catch (e) {
      if (this.lifecycle === 'connecting') this.lifecycle = 'idle';
      throw e;
    }
    if (this.lifecycle !== 'connecting') {
      // Closed meanwhile: close()'s disconnect may have run before the connection was made.
      await this.disconnectQuietly(this.current);
      return false;
    }
    this.lifecycle = 'connected';
    return true;
  }

  /** Asks for a fresh producer before anything more is dispatched (only while connected). */
  want(): void {
    if (this.lifecycle === 'connected' && this.replacement === 'none') this.replacement = 'wanted';
  }

  /**
   * Replaces the producer by a fresh one (a new producer id, sequence numbers from 0), retrying
   * the connection with back-off for as long as the sender is open.
   *
   * @param onAttemptFailed Called after each failed connection attempt, before the back-off.
   * @returns The connection attempts it took, or undefined when the sender closed meanwhile.
   */
  async replace(onAttemptFailed: (error: Error) => void): Promise<number | undefined> {
    this.replacement = 'running';
    let attempts = 0;
    for (;;) {
      const old = this.current;
      this.current = this.kafka.producer(this.options);
      await this.disconnectQuietly(old);
      if (this.lifecycle !== 'connected') return undefined;
      attempts++;
      try {
        await this.current.connect();
        // Closed meanwhile: close()'s disconnect may have run before the connection was made.
        if (this.lifecycle !== 'connected') await this.disconnectQuietly(this.current);
        break;
      } catch (e) {
        if (this.lifecycle !== 'connected') return undefined;
        onAttemptFailed(asError(e));
        const delay = backoffMs(this.config, attempts - 1);
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          this.backoffTimer = setTimeout(() => {
            this.backoffTimer = undefined;
            this.wake = undefined;
            resolve();
          }, delay);
        });
        if (this.lifecycle !== 'connected') return undefined;
      }
    }
    // Closed while connecting: close() disconnects whichever producer is current.
    if (this.lifecycle !== 'connected') return undefined;
    this.replacement = 'none';
    return attempts;
  }

  /**
   * Marks the sender closed and ends a replacement's back-off.
   *
   * @returns True when {@link disconnect} has a producer to disconnect (connect was called).
   */
  markClosed(): boolean {
    const started = this.lifecycle !== 'idle';
    this.lifecycle = 'closed';
    if (this.backoffTimer !== undefined) {
      clearTimeout(this.backoffTimer);
      this.backoffTimer = undefined;
    }
    this.wake?.();
    this.wake = undefined;
    return started;
  }

  /** Disconnects the current producer; a failure goes to `onAsyncError`. */
  disconnect(): Promise<void> {
    return this.disconnectQuietly(this.current);
  }

  private async disconnectQuietly(producer: KafkajsProducerLike): Promise<void> {
    try {
      await producer.disconnect();
    } catch (e) {
      this.onAsyncError(asError(e));
    }
  }
}
