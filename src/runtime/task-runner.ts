import {
  BehaviorSubject,
  catchError,
  defer,
  EMPTY,
  exhaustMap,
  filter,
  finalize,
  interval,
  type Observable,
  type Subscription,
  tap,
} from 'rxjs';
import { canonicalJson } from '../api/canonical-json.js';
import { type Clock, systemClock } from '../api/clock.js';
import { OffsetDecodeError, TributaryError, toTributaryError, traceOf } from '../api/errors.js';
import { type Logger, silentLogger } from '../api/logger.js';
import { isRetriableError } from '../api/retriable-error.js';
import type { SourceRecord } from '../api/source-record.js';
import {
  hasDefaultCommitRecord,
  hasDefaultHeartbeats,
  type OffsetReader,
  type SourceTask,
  type SourceTaskContext,
} from '../api/source-task.js';
import { clockDelay, withTimeout, yieldToEventLoop } from './clock-timers.js';
import type { TransactionSettings } from './exactly-once-settings.js';
import { FlushCommitter } from './pipeline/flush-committer.js';
import type { CommitterHost, OffsetCommitter } from './pipeline/offset-committer.js';
import { OffsetRules } from './pipeline/offset-rules.js';
import { safeJson } from './pipeline/record-checks.js';
import { RecordDispatcher } from './pipeline/record-dispatcher.js';
import { SenderStallReport } from './pipeline/sender-stall-report.js';
import { TaskHooks } from './pipeline/task-hooks.js';
import { guardListener, type TaskErrorCounts, type TaskListener } from './pipeline/task-listener.js';
import { TransactionCommitter } from './pipeline/transaction-committer.js';
import {
  isTransactionalSender,
  type JsonObject,
  type OffsetStore,
  type RecordSender,
  type TransactionalRecordSender,
} from './ports.js';
import { SubmittedRecords } from './submitted-records.js';
import { inFlightBound, type TaskSettings } from './task-settings.js';
import type { TaskStatus } from './task-status.js';
import { NO_TRANSFORMS, type TransformChain } from './transform-chain.js';

/** What a {@link TaskRunner} runs and with what. */
export interface TaskRunnerOptions<P, O, C> {
  readonly connector: string;
  readonly taskId: number;
  readonly task: SourceTask<P, O, C>;
  readonly config: C;
  readonly settings: TaskSettings;
  readonly sender: RecordSender;
  readonly offsetStore: OffsetStore;
  readonly clock?: Clock;
  readonly logger?: Logger;
  readonly listener?: TaskListener;
  /** Start PAUSED instead of RUNNING (KIP-980 `initial_state`). */
  readonly startPaused?: boolean;
  /** The connector's transforms (`transforms=...`), applied to data records after poll(), before conversion. */
  readonly transforms?: TransformChain;
  /**
   * Exactly-once (KIP-618): records and their offsets go in transactions ending as these say;
   * the sender must be a {@link TransactionalRecordSender}. Absent: at-least-once, offsets
   * flushed to the offset store.
   */
  readonly transactions?: TransactionSettings | undefined;
}

export type { FlushOutcome, TaskErrorCounts, TaskListener, TaskProbe } from './pipeline/task-listener.js';

type Stored = Map<string, { partition: JsonObject; offset: JsonObject }>;

/** How long a poll() or produceHeartbeatRecords() call may run before the task says it has not completed. */
const SLOW_CALL_MS = 60_000;

/**
 * Runs one source task: poll rounds merged with heartbeats, routing and conversion, sending,
 * per-partition acknowledgement tracking, periodic offset flushes and the task's lifecycle.
 *
 * The same pipeline runs under the mock runtime, the embedded sink and Kafka: everything
 * outside (sender, offset store, clock) comes in through ports.
 */
export class TaskRunner<P, O, C> {
  /** The task's state; completes when the runner is done for good. */
  readonly state$: BehaviorSubject<TaskStatus> = new BehaviorSubject<TaskStatus>({ state: 'UNASSIGNED' });

  private readonly task: SourceTask<P, O, C>;
  private readonly settings: TaskSettings;
  private readonly sender: RecordSender;
  private readonly store: OffsetStore;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly listener: TaskListener;
  private readonly id: string;
  private readonly transforms: TransformChain;

  /** Partitions and offsets are kept encoded: a snapshot taken when the record was handed over. */
  private readonly submitted = new SubmittedRecords<JsonObject, JsonObject>();
  private heartbeatBusy = false;
  /** When the running produceHeartbeatRecords() call started, and whether its slowness was logged. */
  private heartbeatStartedAt = 0;
  private heartbeatSlowWarned = false;
  /** Whether a poll round that overran the in-flight bound was logged (once per task). */
  private overrunWarned = false;

  private stopping = false;
  private starting: Promise<void> | undefined;
  private startAttempted = false;
  private taskStarted = false;
  /** Whether the task goes PAUSED rather than RUNNING once started: `startPaused`, then a pause or resume that came while it started. */
  private pausedAtStart: boolean;
  /** While start() is retried after a RetriableError: the retry and its message. */
  private startRetry: { readonly retry: number; readonly message: string } | undefined;
  private settleFirstAttempt: () => void = () => {};
  /** Settles when the first start() attempt has: the task runs, failed, is retrying its start, or was stopped. */
  private readonly firstAttempt = new Promise<void>((resolve) => {
    this.settleFirstAttempt = resolve;
  });
  private loop: Promise<void> = Promise.resolve();
  private round: Subscription | undefined;
  private heartbeatTimer: Subscription | undefined;
  private wakeLoop: (() => void) | undefined;
  private wakeDrained: (() => void) | undefined;
  private shutdown: Promise<void> | undefined;
  /** Where acknowledged offsets go: flushes to the offset store, or Kafka transactions. */
  private readonly committer: OffsetCommitter<P, O>;
  /** Records in flight at which polling pauses ({@link inFlightBound}). */
  private readonly maxInFlight: number;
  /** The most records one poll round has emitted so far (the in-flight bound applies between rounds). */
  private largestRound = 0;
  /**
   * Set once the task's stop() is called (or the runner aborted): a transaction or send that
   * completes later calls neither commitRecord() nor commit() on the stopped task.
   */
  private taskStopCalled = false;
  /** The sender's last stall report, while Kafka does not acknowledge records. */
  private readonly stall: SenderStallReport;
  /** The task's commit() and sourceLag() after a commit. */
  private readonly hooks: TaskHooks<P, O>;
  private retries = 0;
  private lastRetry: string | undefined;
  /** Consecutive poll rounds that ended with a RetriableError (0 after a round that did not). */
  private pollRetryAttempt = 0;
  private cancelRetryDelay: (() => void) | undefined;
  /** The stages from a record to the sender, and the acknowledgements back. */
  private readonly dispatcher: RecordDispatcher<P, O>;
  /** Encoding of partitions and offsets, the read-back check and the KIP-910 update rules. */
  private readonly rules: OffsetRules<P, O>;

  constructor(private readonly options: TaskRunnerOptions<P, O, C>) {
    this.task = options.task;
    this.pausedAtStart = options.startPaused === true;
    this.settings = options.settings;
    this.sender = options.sender;
    this.store = options.offsetStore;
    this.clock = options.clock ?? systemClock;
    this.id = `${options.connector}-${options.taskId}`;
    this.log = (options.logger ?? silentLogger).child({ connector: options.connector, task: options.taskId });
    this.listener = guardListener(options.listener ?? {}, this.log);
    this.rules = new OffsetRules(this.task, options.connector, this.id, this.clock, this.log, () => this.settings.flushTimeoutMs);
    this.stall = new SenderStallReport(this.id, this.log, () => this.maxInFlight);
    this.sender.onStall?.((stall) => this.stall.report(stall));
    this.transforms = options.transforms ?? NO_TRANSFORMS;
    this.listener.attached?.(this);
    this.maxInFlight = inFlightBound(options.settings, options.transactions);
    this.hooks = new TaskHooks(
      this.task as SourceTask<P, O, unknown>,
      this.rules,
      this.clock,
      this.log,
      this.listener,
      () => this.settings.flushTimeoutMs,
      () => this.taskStarted,
      () => this.taskStopCalled,
    );
    const host = this.committerHost();
    if (options.transactions !== undefined) {
      if (!isTransactionalSender(options.sender)) {
        throw new TributaryError(
          'CONFIG_INVALID',
          `Task ${this.id}: exactly.once.source.support=enabled needs a transactional Kafka sender; this worker's sender is not one (exactly-once needs bootstrap.servers and offsets in Kafka)`,
        );
      }
      this.committer = new TransactionCommitter(host, options.sender, options.transactions);
    } else this.committer = new FlushCommitter(host, options.offsetStore);
    const keepsRecords = this.listener.recordAcked !== undefined || !hasDefaultCommitRecord(this.task);
    this.dispatcher = new RecordDispatcher(
      {
        ...host,
        sender: this.sender,
        transforms: this.transforms,
        committer: this.committer,
        taskStopped: () => this.taskStopCalled,
        retryDelay: (what, e, attempt, atMost) => this.retryDelay(what, e, attempt, atMost),
        settled: (acked) => {
          const inFlight = this.submitted.inFlight;
          if (acked && this.wakeLoop && inFlight < this.maxInFlight) this.wake();
          if (this.wakeDrained && inFlight === 0) this.wakeDrained();
        },
      },
      keepsRecords,
    );
  }

  /** What the committer uses of this runner. */
  private committerHost(): CommitterHost<P, O> {
    return {
      id: this.id,
      connector: this.options.connector,
      task: this.task as SourceTask<P, O, unknown>,
      clock: this.clock,
      log: this.log,
      listener: this.listener,
      submitted: this.submitted,
      rules: this.rules,
      maxInFlight: this.maxInFlight,
      settings: () => this.settings,
      state: () => this.status.state,
      stopping: () => this.stopping,
      taskStarted: () => this.taskStarted,
      fail: (error) => this.fail(error),
      wake: () => {
        if (this.wakeLoop && this.submitted.inFlight < this.maxInFlight) this.wake();
      },
      applyOffsetUpdates: (pending) =>
        this.rules.applyUpdates(
          pending,
          (key) => this.submitted.has(key),
          () => ({ retried: this.dispatcher.retried, backlog: this.dispatcher.backlog }),
        ),
      commitHook: (committed) => this.hooks.commitHook(committed),
      reportLag: () => this.hooks.reportLag(),
    };
  }

  /** The current state. */
  get status(): TaskStatus {
    return this.state$.value;
  }

  /**
   * Why the final offset flush of the last stop failed, if it did: the offsets acknowledged
   * since the last successful flush are then not stored, and the next run repeats those
   * records. Logged as an ERROR when it happens.
   *
   * @example
   * ```ts
   * declare const runner: TaskRunner<unknown, unknown, unknown>;
   * await runner.stop();
   * if (runner.finalFlushError) console.error(runner.finalFlushError.message);
   * ```
   */
  get finalFlushError(): TributaryError | undefined {
    return this.committer.finalError;
  }

  /**
   * While the sender reports that Kafka does not acknowledge records (broker down, unreachable
   * or frozen): what it said and for how long, for the task's status; else undefined. The task
   * stays RUNNING meanwhile: records are retried in order and polling pauses at the in-flight
   * bound (unless the producer's `delivery.timeout.ms` is set, after which the task fails).
   */
  get warning(): string | undefined {
    return this.stall.warning() ?? this.committer.warning();
  }

  /** Retries and skipped records so far. */
  get errorCounts(): TaskErrorCounts {
    return { retries: this.retries, skipped: this.dispatcher.skipped, ...(this.lastRetry ? { lastRetry: this.lastRetry } : {}) };
  }

  /** Records sent and not yet acknowledged. */
  get inFlight(): number {
    return this.submitted.inFlight;
  }

  /** Records (data and heartbeat) acknowledged whose offsets are not yet in the store, and their key and value bytes. */
  uncommitted(): { records: number; bytes: number } {
    const queued = this.submitted.ackedNotTaken();
    const committing = this.committer.uncommitted();
    return {
      records: queued.records + committing.records,
      bytes: queued.bytes + committing.bytes,
    };
  }

  /**
   * Reads the committed offsets, starts the task, then polls, heartbeats and flushes until
   * stopped. Resolves once the task runs (or has failed to start: see {@link status}).
   */
  start(): Promise<void> {
    if (this.starting) throw new Error(`Task ${this.id} was already started`);
    this.starting = this.startOnce().finally(() => {
      this.startRetry = undefined;
      this.settleFirstAttempt();
    });
    return this.starting;
  }

  /**
   * Settles (never rejects) once the first attempt of {@link start} has: the task runs, has
   * failed, is retrying its `start()` after a RetriableError (see {@link startRetrying}), or was
   * stopped. What a caller that must not wait for the retries awaits.
   */
  startAttempt(): Promise<void> {
    return this.firstAttempt;
  }

  /**
   * While the task's `start()` is retried after a RetriableError (the task is still UNASSIGNED):
   * what it said and the retry's number, for the task's status; else undefined.
   */
  get startRetrying(): string | undefined {
    const r = this.startRetry;
    return r === undefined
      ? undefined
      : `start() of task ${this.id} raised a RetriableError and is retried until it succeeds or the task is stopped (retry ${r.retry}): ${r.message}`;
  }

  private async startOnce(): Promise<void> {
    let stored: Stored;
    try {
      stored = await this.readStored();
      // Stopped while the offsets were read: the task was never started, so it needs no stop().
      if (this.stopping) return;
      this.startAttempted = true;
      for (let attempt = 1; ; attempt++) {
        try {
          await this.task.start(this.options.config, this.context(stored));
          break;
        } catch (e) {
          // A RetriableError from start() is retried until the task is stopped.
          if (isRetriableError(e) && this.stopping) return;
          if (!isRetriableError(e)) throw e;
          this.startRetry = { retry: attempt, message: e instanceof Error ? e.message : safeJson(e) };
          this.settleFirstAttempt();
          await this.retryDelay('start', e, attempt);
          if (this.stopping) return;
        }
      }
      this.taskStarted = true;
    } catch (e) {
      this.fail(toTributaryError(e, 'TASK_START_FAILED', `Task ${this.id} failed to start`));
      return;
    }
    if (this.stopping) return;
    this.startRetry = undefined;
    this.setStatus({ state: this.pausedAtStart ? 'PAUSED' : 'RUNNING' });
    this.log.info(
      { event: 'task.started', committedOffsets: stored.size },
      stored.size === 0
        ? 'task started with no committed offsets: the task starts from its beginning'
        : `task started, resuming from ${stored.size} committed offset${stored.size === 1 ? '' : 's'}`,
    );
    this.committer.start(stored);
    // heartbeats() fails the task on an error itself; the handler keeps RxJS from rethrowing it
    // outside the task, where it would end the process.
    if (this.settings.heartbeatIntervalMs > 0) this.heartbeatTimer = this.heartbeats().subscribe({ error: () => {} });
    // The setting would do nothing without a word: this task has no heartbeat records to give.
    if (this.settings.heartbeatIntervalMs > 0 && hasDefaultHeartbeats(this.task))
      this.log.warn(
        { event: 'task.heartbeats.none', heartbeatIntervalMs: this.settings.heartbeatIntervalMs },
        `heartbeat.interval.ms is ${this.settings.heartbeatIntervalMs}, but this connector's task does not implement produceHeartbeatRecords(): it writes no heartbeat records. Leave heartbeat.interval.ms out for it`,
      );
    // The loop catches what a task does wrong; this is for what the runtime did not foresee,
    // which must fail this task rather than stall it with a rejection no one handles.
    this.loop = this.pollLoop().catch((e: unknown) =>
      this.fail(toTributaryError(e, 'POLL_FAILED', `The poll loop of task ${this.id} failed`)),
    );
  }

  /** Stops polling and heartbeats; offsets keep flushing. No-op unless RUNNING, or still starting (it then starts PAUSED). */
  pause(): void {
    if (this.status.state === 'UNASSIGNED' && !this.stopping) this.pausedAtStart = true;
    if (this.status.state !== 'RUNNING' || this.stopping) return;
    this.setStatus({ state: 'PAUSED' });
    this.log.info({ event: 'task.paused' }, 'task paused');
  }

  /** Polls and heartbeats again. No-op unless PAUSED, or still starting (it then starts RUNNING). */
  resume(): void {
    if (this.status.state === 'UNASSIGNED' && !this.stopping) this.pausedAtStart = false;
    if (this.status.state !== 'PAUSED' || this.stopping) return;
    this.setStatus({ state: 'RUNNING' });
    this.log.info({ event: 'task.resumed' }, 'task resumed');
    this.wake();
  }

  /**
   * Graceful stop: no new poll round or heartbeat; waits for the current round and the
   * in-flight acknowledgements (each up to `task.shutdown.graceful.timeout.ms`), flushes
   * offsets, then calls the task's `stop()`. A FAILED task stays FAILED.
   */
  stop(): Promise<void> {
    return this.close();
  }

  /**
   * Stops at once as a crash would: no further poll, heartbeat, flush or callback is acted
   * on, nothing is flushed and the task's `stop()` is not called. For tests of recovery.
   */
  abort(): void {
    this.stopping = true;
    this.taskStopCalled = true;
    this.cancelRetryDelay?.();
    this.shutdown ??= Promise.resolve();
    this.unsubscribe(this.heartbeatTimer, 'heartbeat');
    this.committer.halt();
    this.unsubscribe(this.round, 'poll round');
    this.wake();
    if (this.status.state !== 'FAILED') this.setStatus({ state: 'STOPPED' });
  }

  /**
   * Flushes committable offsets now (waits for a flush already running first). With
   * exactly-once: commits the open transaction, records and offsets.
   */
  async flushNow(): Promise<boolean> {
    return this.committer.commitNow();
  }

  private context(stored: Stored): SourceTaskContext<P, O> {
    const codec = this.task.offsets;
    const connector = this.options.connector;
    const decode = (entry: { partition: JsonObject; offset: JsonObject }): O => {
      const result = codec.decodeOffset(entry.offset);
      if (!result.ok) throw new OffsetDecodeError(connector, entry.partition, result.problems);
      return result.value;
    };
    const offsets: OffsetReader<P, O> = {
      offset: async (partition) => {
        const entry = stored.get(this.rules.encodePartition(partition).key);
        return entry ? decode(entry) : undefined;
      },
      offsets: async () => this.rules.decodeAll(stored.values()),
    };
    const transactionContext = this.committer.transactionContext();
    return { connector, taskId: this.options.taskId, clock: this.clock, offsets, logger: this.log, transactionContext };
  }

  private async readStored(): Promise<Stored> {
    const stored: Stored = new Map();
    for (const entry of await this.store.read(this.options.connector)) {
      if (entry.offset !== null) stored.set(canonicalJson(entry.partition), { partition: entry.partition, offset: entry.offset });
    }
    return stored;
  }

  private async pollLoop(): Promise<void> {
    while (!this.stopping) {
      if (this.status.state !== 'RUNNING' || this.submitted.inFlight >= this.maxInFlight) {
        this.committer.pollPaused();
        await new Promise<void>((resolve) => {
          this.wakeLoop = resolve;
        });
        continue;
      }
      // As Kafka Connect does at the top of each loop pass: move acknowledged offsets out of the
      // per-partition queues now, so they do not grow with every record until the next flush.
      this.committer.takeCommittable();
      const emitted = await this.pollRound();
      if (emitted > this.largestRound) this.largestRound = emitted;
      if (this.dispatcher.backlogDone) await this.dispatcher.backlogDone;
      const ended = this.committer.roundEnded();
      if (ended !== undefined) await ended;
      if (this.stopping) break;
      if (this.pollRetryAttempt > 0) {
        await this.retryDelay('poll', undefined, this.pollRetryAttempt);
      } else if (emitted === 0 && this.settings.pollBackoffMs > 0) {
        const backoff = clockDelay(this.clock, this.settings.pollBackoffMs);
        this.wakeLoop = backoff.cancel;
        await backoff.promise;
      } else {
        await yieldToEventLoop();
      }
    }
  }

  private pollRound(): Promise<number> {
    const started = this.clock.now();
    return this.pollRoundOnce().then((count) => {
      this.listener.pollCompleted?.(count, this.clock.now() - started);
      return count;
    });
  }

  private pollRoundOnce(): Promise<number> {
    return new Promise((resolve) => {
      let count = 0;
      let source: Observable<SourceRecord<P, O>>;
      // A TransactionContext request made in poll() is about the records of this round.
      this.committer.inRound(true);
      try {
        source = this.task.poll();
        if (typeof (source as Partial<Observable<unknown>> | undefined)?.subscribe !== 'function') {
          throw new TributaryError(
            'POLL_FAILED',
            `poll() of task ${this.id} returned ${safeJson(source)}, not an Observable: return one (rxjs from() wraps a Promise or an array)`,
          );
        }
      } catch (e) {
        this.committer.inRound(false);
        if (!this.pollRetriable(e)) this.fail(toTributaryError(e, 'POLL_FAILED', `poll() of task ${this.id} threw`));
        resolve(0);
        return;
      }
      // A poll() that never completes stops polling without a word: say so once per round.
      const slow = this.clock.scheduler.schedule(() => {
        this.log.warn(
          { event: 'poll.slow', records: count, afterMs: SLOW_CALL_MS },
          `poll() of task ${this.id} has not completed after ${SLOW_CALL_MS / 1000} s (${count} record(s) so far): the task polls again only once it completes. poll() must return an Observable that completes (from(batch), take(n), BoundedBuffer.drainObservable()); a source that keeps pushing belongs in start(), into a BoundedBuffer`,
        );
      }, SLOW_CALL_MS);
      const end = (): void => {
        slow.unsubscribe();
        this.committer.inRound(false);
        resolve(count);
      };
      this.round = source.subscribe({
        next: (record) => {
          count++;
          this.dispatcher.dispatch(record, false);
          if (this.submitted.inFlight > 2 * this.maxInFlight && !this.overrunWarned) {
            this.overrunWarned = true;
            this.log.warn(
              { event: 'poll.overrun', inFlight: this.submitted.inFlight, maxInFlight: this.maxInFlight },
              `poll() of task ${this.id} emitted so many records in one round that ${this.submitted.inFlight} are in flight, over twice task.max.in.flight.records=${this.maxInFlight}: the bound pauses polling between rounds, not inside one, so memory grows with the round. Return smaller rounds (BoundedBuffer.drainObservable(max), take(n)). Said once per task`,
            );
          }
        },
        error: (e: unknown) => {
          if (!this.pollRetriable(e)) this.fail(toTributaryError(e, 'POLL_FAILED', `poll() of task ${this.id} failed`));
          end();
        },
        complete: () => {
          this.pollRetryAttempt = 0;
          end();
        },
      });
      // Unsubscribing on stop or failure ends the round; resolve so the loop can exit.
      this.round.add(end);
    });
  }

  private heartbeats(): Observable<unknown> {
    return interval(this.settings.heartbeatIntervalMs, this.clock.scheduler).pipe(
      filter(() => {
        // While Kafka does not acknowledge records (the sender reports a stall), a tick is skipped:
        // memory stays bounded however long the outage, and nothing is lost, since the next
        // heartbeat after it carries the fresher offset. Under full load the in-flight bound is
        // reached all the time, and a round that started below it may take records in flight up
        // to the bound plus that round; heartbeats must keep coming then, so only the bound plus
        // the larger of itself and the largest round so far stops them (a sender that reports no
        // stalls: memory stays bounded by the task's own rounds). A tick behind a transform being retried is
        // skipped too: it would wait in the backlog, one more per tick for as long as the retry lasts.
        if (
          this.status.state !== 'RUNNING' ||
          this.stopping ||
          this.dispatcher.backlog !== undefined ||
          this.stall.stalled ||
          this.submitted.inFlight >= this.maxInFlight + Math.max(this.maxInFlight, this.largestRound)
        ) {
          return false;
        }
        // A tick that comes while the previous call is still running is dropped, not queued
        // (exhaustMap would drop it too; this counts it).
        if (this.heartbeatBusy) {
          this.listener.heartbeatTick?.(true);
          if (!this.heartbeatSlowWarned && this.clock.now() - this.heartbeatStartedAt >= SLOW_CALL_MS) {
            this.heartbeatSlowWarned = true;
            this.log.warn(
              { event: 'heartbeat.slow', afterMs: this.clock.now() - this.heartbeatStartedAt },
              `produceHeartbeatRecords() of task ${this.id} has not completed after ${Math.round((this.clock.now() - this.heartbeatStartedAt) / 1000)} s: every heartbeat tick is skipped until it does. It must return an Observable that completes (of(record), EMPTY)`,
            );
          }
        }
        return !this.heartbeatBusy;
      }),
      exhaustMap(() => {
        this.heartbeatBusy = true;
        this.heartbeatStartedAt = this.clock.now();
        this.heartbeatSlowWarned = false;
        this.listener.heartbeatTick?.(false);
        return defer(() => this.task.produceHeartbeatRecords()).pipe(
          tap({ next: (record) => this.dispatcher.dispatch(record, true) }),
          catchError((e: unknown) => {
            // A RetriableError skips this tick; the next tick is the retry.
            if (isRetriableError(e)) this.noteRetry('produceHeartbeatRecords', e, this.settings.heartbeatIntervalMs);
            else this.fail(toTributaryError(e, 'HEARTBEAT_FAILED', `produceHeartbeatRecords() of task ${this.id} failed`));
            return EMPTY;
          }),
          finalize(() => {
            this.heartbeatBusy = false;
          }),
        );
      }),
    );
  }

  /** A RetriableError from poll() (thrown or emitted): noted, and the next round waits a back-off. */
  private pollRetriable(e: unknown): boolean {
    if (!isRetriableError(e)) return false;
    this.pollRetryAttempt++;
    this.noteRetry('poll', e, this.retryBackoff(this.pollRetryAttempt));
    return true;
  }

  /** Back-off before retry `attempt` (from 1): 100 ms doubling, at most `errors.retry.delay.max.ms`. */
  private retryBackoff(attempt: number): number {
    return Math.min(this.settings.retryDelayMaxMs, 100 * 2 ** Math.min(attempt - 1, 30));
  }

  private noteRetry(what: string, e: unknown, delayMs: number): void {
    this.retries++;
    this.lastRetry = e instanceof Error ? e.message : safeJson(e);
    this.log.warn(
      { event: 'task.retry', stage: what, retries: this.retries, delayMs, err: e },
      `${what} of task ${this.id} raised a RetriableError; retrying in ${delayMs} ms (retry ${this.retries}): ${this.lastRetry}`,
    );
  }

  /** Notes a retry (unless `e` is undefined: already noted) and waits its back-off; a stop ends the wait. */
  private async retryDelay(what: string, e: unknown, attempt: number, atMost = Number.POSITIVE_INFINITY): Promise<void> {
    const delay = Math.min(this.retryBackoff(attempt), atMost);
    if (e !== undefined) this.noteRetry(what, e, delay);
    const wait = clockDelay(this.clock, delay);
    this.cancelRetryDelay = wait.cancel;
    await wait.promise;
    this.cancelRetryDelay = undefined;
  }

  private wake(): void {
    const wake = this.wakeLoop;
    this.wakeLoop = undefined;
    wake?.();
  }

  private fail(error: TributaryError): void {
    if (this.status.state === 'FAILED' || this.status.state === 'STOPPED') return;
    this.setStatus({ state: 'FAILED', trace: traceOf(error), error });
    this.log.error({ event: 'task.failed', err: error }, error.message);
    void this.close();
  }

  private close(): Promise<void> {
    this.shutdown ??= this.closeOnce();
    return this.shutdown;
  }

  private async closeOnce(): Promise<void> {
    this.stopping = true;
    // Heartbeats stop at once; periodic flushes go on until the final flush.
    this.unsubscribe(this.heartbeatTimer, 'heartbeat');
    this.cancelRetryDelay?.();
    this.wake();
    const timeout = this.settings.shutdownTimeoutMs;
    // Never call the task's stop() while its start() still runs: a stop() that comes first
    // would leak whatever start() opens after it (a replication connection, a socket).
    const startSettled = this.starting ? (await withTimeout(this.clock, this.starting, timeout)).ok : true;
    if (!(await withTimeout(this.clock, this.loop, timeout)).ok) {
      this.log.warn({ event: 'task.stop.round.timeout' }, `poll round still running after ${timeout} ms; abandoned`);
    }
    this.unsubscribe(this.round, 'poll round');
    await this.committer.beforeDrain(timeout);
    await this.awaitInFlight(timeout);
    await this.committer.finalCommit(timeout);
    this.transforms.close((alias, err) =>
      this.log.warn({ event: 'transform.close.failed', transform: alias, err }, `close() of transform '${alias}' threw; ignored`),
    );
    if (this.startAttempted && startSettled) await this.stopTask(timeout);
    else if (this.startAttempted) {
      this.log.warn(
        { event: 'task.start.outlived.stop' },
        `start() still running after task.shutdown.graceful.timeout.ms (${timeout} ms); stop() is called once it returns`,
      );
      const starting = this.starting as Promise<void>;
      void starting.then(() => this.stopTask(timeout));
    }
    if (this.status.state !== 'FAILED') this.setStatus({ state: 'STOPPED' });
    this.log.info({ event: 'task.stopped', state: this.status.state }, 'task stopped');
  }

  /**
   * Ends a subscription to the task's Observables. Their teardown is the task's code: one that
   * throws (RxJS's UnsubscriptionError) must not end the stop before the final flush and the
   * task's stop().
   */
  private unsubscribe(subscription: Subscription | undefined, what: string): void {
    try {
      subscription?.unsubscribe();
    } catch (err) {
      this.log.warn({ event: 'task.unsubscribe.failed', err }, `the teardown of the task's ${what} Observable threw; ignored`);
    }
  }

  /** Calls the task's stop() once, bounded by the grace period; never rejects. */
  private async stopTask(timeout: number): Promise<void> {
    this.taskStopCalled = true;
    const stopped = await withTimeout(
      this.clock,
      Promise.resolve().then(() => this.task.stop()),
      timeout,
    );
    if (!stopped.ok) {
      this.log.warn(
        { event: 'task.stop.failed', err: stopped.error },
        stopped.timedOut ? `stop() did not return within ${timeout} ms; not waited for` : 'stop() threw; ignored',
      );
    }
  }

  private async awaitInFlight(timeoutMs: number): Promise<void> {
    if (this.submitted.inFlight === 0) return;
    const drained = new Promise<void>((resolve) => {
      this.wakeDrained = resolve;
    });
    void this.sender.flush().catch(() => {});
    const outcome = await withTimeout(this.clock, drained, timeoutMs);
    this.wakeDrained = undefined;
    if (!outcome.ok) {
      this.log.warn(
        { event: 'task.stop.inflight.timeout', inFlight: this.submitted.inFlight },
        `${this.submitted.inFlight} records still unacknowledged after ${timeoutMs} ms; their offsets are not committed`,
      );
    }
  }

  private setStatus(status: TaskStatus): void {
    this.state$.next(status);
    this.listener.stateChanged?.(status);
  }
}
