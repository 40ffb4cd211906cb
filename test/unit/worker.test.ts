import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type DatagenConfig, DatagenConnector } from '../../examples/datagen/src/index.js';
import { systemClock } from '../../src/api/clock.js';
import type { ConnectorContext } from '../../src/api/source-connector.js';
import { readConnectorFile } from '../../src/cli/config-files.js';
import type { OffsetEntry, RecordSender, SenderStall } from '../../src/runtime/ports.js';
import { type CreateStep, Worker, type WorkerOptions } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';

/** Datagen whose task count changes on request, as a connector that found new tables would. */
class GrowingConnector extends DatagenConnector {
  static last: GrowingConnector | undefined;
  wanted = 1;
  context!: ConnectorContext;
  override start(_settings: DatagenConfig, context: ConnectorContext): void {
    this.context = context;
    GrowingConnector.last = this;
  }
  override taskConfigs(maxTasks: number, settings: DatagenConfig) {
    return super.taskConfigs(Math.min(maxTasks, this.wanted), settings);
  }
}

/** Datagen whose start() throws, as a connector that cannot reach its source would. */
class FailingConnector extends DatagenConnector {
  override start(): void {
    throw new Error('source unreachable');
  }
}

/** A connector whose stop() assumes start() opened its pool: it throws at once after a failed start(). */
class FailingStopConnector extends DatagenConnector {
  private pool: { end(): void } | undefined;
  override start(): void {
    throw new Error('source unreachable');
  }
  override stop(): void {
    (this.pool as { end(): void }).end();
  }
}

function worker(store = new MemoryOffsetStore(), extra: Partial<WorkerOptions> = {}) {
  const sender = new MockSender(systemClock);
  const w = new Worker({
    config: { 'offset.flush.interval.ms': '100' },
    offsetStore: store,
    createSender: async () => sender,
    loadConnector: async (spec) => {
      if (spec === 'growing') return GrowingConnector;
      if (spec === 'failing') return FailingConnector;
      if (spec === 'failing-stop') return FailingStopConnector;
      if (spec !== 'datagen') throw new Error(`unknown ${spec}`);
      return DatagenConnector;
    },
    ...extra,
  });
  return { w, store, sender };
}

const config = (extra: Record<string, string> = {}) => ({
  'connector.class': 'datagen',
  topic: 'd',
  rate: '0',
  'max.records': '5',
  ...extra,
});

const at = (seq: number, sequence = 0): OffsetEntry => ({ partition: { sequence, task: 0 }, offset: { seq } });
/** Waits (real time) until `check` holds: the worker runs on the system clock. */
async function until(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('Worker', () => {
  it("refuses to start with a bad task setting only the worker gives, as the worker config's, not the first connector's", async () => {
    const { w } = worker(new MemoryOffsetStore(), { config: { 'offset.flush.timeout.ms': '0' } });
    await expect(w.start()).rejects.toThrow(
      'Invalid worker config: Invalid configuration offset.flush.timeout.ms: expected integer >= 1, got 0',
    );
  });

  it('warns at start of a bad worker value a connector can override, runs a connector that overrides it, refuses one that takes it', async () => {
    const warnings: string[] = [];
    const quiet = () => {};
    const logger = {
      debug: quiet,
      info: quiet,
      error: quiet,
      warn: (_fields: object, message?: string) => warnings.push(message ?? ''),
      child: () => logger,
    };
    const { w, sender } = worker(new MemoryOffsetStore(), {
      config: { 'offset.flush.interval.ms': '100', 'task.max.in.flight.records': 'lots' },
      logger,
    });
    await w.start();
    const problem = `Invalid configuration task.max.in.flight.records: expected integer >= 1, got "lots" (the worker config's value, which a connector config can override)`;
    expect(warnings).toEqual([`worker config: ${problem}; a connector that does not set its own is refused`]);
    await expect(w.createConnector('taking', config())).rejects.toThrow(problem);
    await w.createConnector('gen', config({ 'task.max.in.flight.records': '10' }));
    await until(() => sender.sent.length === 5, 'five records');
    await w.stop();
  });

  it("resets a stopped connector's offsets only once the write of its last flush has landed, else refuses and changes nothing", async () => {
    /** A store whose writes, while held, wait for release(), in call order (as OffsetStore requires). */
    class HeldStore extends MemoryOffsetStore {
      held = false;
      private queue: Promise<void> = Promise.resolve();
      private gates: Array<() => void> = [];
      override write(connector: string, entries: readonly OffsetEntry[]): Promise<void> {
        const wait = this.held ? new Promise<void>((r) => this.gates.push(r)) : Promise.resolve();
        const next = this.queue.then(async () => {
          await wait;
          this.apply(connector, entries);
        });
        this.queue = next.catch(() => {});
        return next;
      }
      release(): void {
        this.held = false;
        for (const open of this.gates.splice(0)) open();
      }
    }
    const store = new HeldStore();
    const { w, sender } = worker(store, {
      config: {
        'offset.flush.interval.ms': '600000',
        'offset.flush.timeout.ms': '200',
        'task.shutdown.graceful.timeout.ms': '300',
      },
    });
    await w.start();
    await w.createConnector('gen', config());
    await until(() => sender.sent.length === 5, 'five records');
    store.held = true; // the store is slow now: the final flush at stop times out, its write still queued
    await w.stopConnector('gen');
    expect(await store.read('gen')).toEqual([]);
    await expect(w.resetOffsets('gen')).rejects.toMatchObject({
      code: 'OFFSET_FLUSH_TIMEOUT',
      message: expect.stringContaining("An offsets write of connector 'gen' made before it stopped has not finished within"),
    });
    const reset = w.resetOffsets('gen');
    store.release();
    await reset;
    expect(await store.read('gen')).toEqual([]);
    await w.stop();
  });

  it('runs a connector to completion and keeps offsets after delete', async () => {
    const { w, store, sender } = worker();
    await w.start();
    await w.createConnector('gen', config());
    await until(() => sender.sent.length === 5, 'five records');
    await w.deleteConnector('gen');
    expect(await store.read('gen')).toEqual([at(5)]);
  });

  it("refuses a connector file's offsets with a key the codec does not know, naming it, and creates nothing", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-worker-'));
    const file = join(dir, 'gen.json');
    await writeFile(
      file,
      JSON.stringify({ name: 'gen', config: config(), offsets: [{ partition: { task: 0, sequence: 0 }, offset: { sqe: 3 } }] }),
    );
    const c = await readConnectorFile(file);
    const { w, store } = worker();
    await w.start();
    await expect(w.createConnector(c.name, c.config, { offsets: c.offsets })).rejects.toMatchObject({
      code: 'OFFSET_DECODE',
      message: expect.stringContaining('offsets[0].offset.sqe: unknown key (known: seq)'),
    });
    expect(w.connectorNames()).toEqual([]);
    expect(await store.read('gen')).toEqual([]);
    await w.stop();
  });

  it('rejects a bad config listing every problem, and registers nothing', async () => {
    const { w } = worker();
    await w.start();
    await expect(w.createConnector('gen', config({ rate: 'fast', 'tasks.max': '0', topic: '' }))).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      problems: expect.arrayContaining([
        'Invalid configuration rate: expected integer >= 0, got "fast"',
        'Invalid configuration tasks.max: expected integer >= 1, got 0',
      ]),
    });
    expect(w.connectorNames()).toEqual([]);
  });

  it('refuses a second connector of the same name, also while the first is being created', async () => {
    const { w } = worker();
    await w.start();
    const results = await Promise.allSettled([w.createConnector('gen', config()), w.createConnector('gen', config())]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(rejected.reason).toMatchObject({ code: 'CONNECTOR_EXISTS' });
    await w.stop();
  });

  it("shows a RUNNING task's sender stall as the task's trace, and drops it once Kafka answers", async () => {
    class StallingSender extends MockSender {
      listener: ((stall: SenderStall | undefined) => void) | undefined;
      override onStall(listener: (stall: SenderStall | undefined) => void): void {
        this.listener = listener;
      }
    }
    const sender = new StallingSender(systemClock);
    const { w } = worker(new MemoryOffsetStore(), { createSender: async () => sender });
    await w.start();
    await w.createConnector('gen', config({ 'max.records': '0' }));
    expect(w.connectorStatus('gen').tasks[0]).toEqual({
      version: '0.1.0',
      id: 0,
      state: 'RUNNING',
      workerId: expect.any(String),
    });
    sender.listener?.({
      since: Date.UTC(2026, 0, 1),
      durationMs: 42_000,
      reason: 'no answer from Kafka within request.timeout.ms=30000',
    });
    const task = w.connectorStatus('gen').tasks[0];
    expect(task?.state).toBe('RUNNING');
    expect(task?.trace).toContain('Kafka has not acknowledged records of task gen-0 for 42 s');
    expect(task?.trace).toContain('request.timeout.ms=30000');
    sender.listener?.(undefined);
    expect(w.connectorStatus('gen').tasks[0]?.trace).toBeUndefined();
    await w.stop();
  });

  it('moves between states, restarts tasks with a new config, and takes nothing once stopping', async () => {
    const { w, sender } = worker();
    await w.start();
    await w.createConnector('gen', config({ 'max.records': '0' }), { initialState: 'PAUSED' });
    // As Kafka Connect: created PAUSED, it starts no tasks until resumed.
    expect(w.connectorStatus('gen')).toMatchObject({ connector: { state: 'PAUSED' }, tasks: [] });
    await w.resumeConnector('gen');
    expect(w.connectorStatus('gen').tasks[0]?.state).toBe('RUNNING');
    await w.stopConnector('gen');
    expect(w.connectorStatus('gen')).toMatchObject({ connector: { state: 'STOPPED' }, tasks: [] });
    await w.putConnectorConfig('gen', config({ 'max.records': '2', 'tasks.max': '2' }));
    expect(w.connectorStatus('gen').connector.state).toBe('STOPPED');
    await w.resumeConnector('gen');
    await until(() => sender.sent.length === 4, 'two records from each task');
    expect(w.connectorStatus('gen').tasks.map((t) => t.state)).toEqual(['RUNNING', 'RUNNING']);
    expect(sender.sent).toHaveLength(4);
    const stopping = w.stop();
    await expect(w.createConnector('late', config())).rejects.toMatchObject({ code: 'WORKER_STOPPING' });
    await stopping;
  });

  it('restarts the tasks with new configs when the connector asks for reconfiguration, keeping its state', async () => {
    const { w } = worker();
    await w.start();
    await w.createConnector('grow', config({ 'connector.class': 'growing', 'tasks.max': '3', 'max.records': '0' }));
    expect(w.connectorStatus('grow').tasks).toHaveLength(1);
    const connector = GrowingConnector.last as GrowingConnector;
    connector.wanted = 2;
    connector.context.requestTaskReconfiguration();
    await until(() => w.connectorStatus('grow').tasks.length === 2, 'two tasks');
    expect(w.connectorStatus('grow').tasks.map((t) => t.state)).toEqual(['RUNNING', 'RUNNING']);
    await w.pauseConnector('grow');
    connector.wanted = 5;
    connector.context.requestTaskReconfiguration();
    await until(() => w.connectorStatus('grow').tasks.length === 3, 'three tasks');
    expect(w.connectorStatus('grow').tasks.map((t) => t.state)).toEqual(['PAUSED', 'PAUSED', 'PAUSED']);
    await w.stop();
  });

  it('undoes a create with offsets whose connector fails to start; a plain create reports it FAILED', async () => {
    const store = new MemoryOffsetStore();
    await store.write('gen', [at(7)]);
    const { w } = worker(store);
    await w.start();
    await expect(
      w.createConnector('gen', config({ 'connector.class': 'failing' }), { offsets: [at(100)] }),
    ).rejects.toMatchObject({ code: 'CONNECTOR_FAILED' });
    expect(w.connectorNames()).toEqual([]);
    expect(await store.read('gen')).toEqual([at(7)]);
    await w.createConnector('gen', config({ 'connector.class': 'failing' }));
    expect(w.connectorStatus('gen').connector.state).toBe('FAILED');
    await w.stop();
  });

  it("reports a connector's start() failure, not the error of a stop() that throws at once after it", async () => {
    const { w } = worker();
    await w.start();
    await w.createConnector('gen', config({ 'connector.class': 'failing-stop' }));
    const status = w.connectorStatus('gen').connector;
    expect(status.state).toBe('FAILED');
    expect(status.trace).toContain('source unreachable');
    await expect(
      w.createConnector('other', config({ 'connector.class': 'failing-stop' }), { offsets: [at(1)] }),
    ).rejects.toMatchObject({ code: 'CONNECTOR_FAILED', message: expect.stringContaining('failed to start') });
    expect(w.connectorNames()).toEqual(['gen']);
    await w.stop();
  });

  it('resets offsets whose stored values cannot be read, which is how they are repaired', async () => {
    class CorruptStore extends MemoryOffsetStore {
      corrupt = true;
      override async read(connector: string): Promise<OffsetEntry[]> {
        if (this.corrupt) throw Object.assign(new Error('unusable offset'), { code: 'OFFSET_STORE_CORRUPT' });
        return super.read(connector);
      }
      override async write(connector: string, entries: readonly OffsetEntry[]): Promise<void> {
        this.corrupt = false;
        return super.write(connector, entries);
      }
      async partitions(): Promise<Array<{ sequence: number; task: number }>> {
        return [{ sequence: 0, task: 0 }];
      }
    }
    const { w, store } = worker(new CorruptStore());
    await w.start();
    await w.createConnector('gen', config({ 'max.records': '0' }), { initialState: 'STOPPED' });
    await expect(w.connectorOffsets('gen')).rejects.toThrow('unusable offset');
    await w.resetOffsets('gen');
    expect(await store.read('gen')).toEqual([]);
    await w.stop();
  });

  it('alters and resets offsets only while STOPPED, validating every entry first', async () => {
    const { w, store } = worker();
    await w.start();
    await w.createConnector('gen', config({ 'max.records': '0' }));
    await expect(w.alterOffsets('gen', [at(3)])).rejects.toMatchObject({ code: 'CONNECTOR_NOT_STOPPED' });
    await expect(w.resetOffsets('gen')).rejects.toMatchObject({ code: 'CONNECTOR_NOT_STOPPED' });
    await w.stopConnector('gen');
    await w.alterOffsets('gen', [at(3), at(4, 1)]);
    await expect(w.alterOffsets('gen', [at(9), { partition: { task: 0 }, offset: { seq: 1 } }])).rejects.toMatchObject({
      code: 'OFFSET_DECODE',
    });
    expect(await w.connectorOffsets('gen')).toEqual([at(3), at(4, 1)]);
    await w.alterOffsets('gen', [{ partition: { task: 0, sequence: 1 }, offset: null }]);
    expect(await store.read('gen')).toEqual([at(3)]);
    await w.resetOffsets('gen');
    expect(await store.read('gen')).toEqual([]);
    await w.stop();
  });
});

describe('Worker.createConnector with initial offsets (KIP-995)', () => {
  it('wipes old offsets of the name and starts the tasks from the given ones', async () => {
    const store = new MemoryOffsetStore();
    await store.write('gen', [at(1), at(1, 9)]);
    const { w, sender } = worker(store);
    await w.start();
    await w.createConnector('gen', config({ 'max.records': '103' }), { offsets: [at(100)], initialState: 'STOPPED' });
    expect(w.connector('gen')?.state).toBe('STOPPED');
    expect(await store.read('gen')).toEqual([at(100)]);
    await w.resumeConnector('gen');
    await until(() => sender.sent.length === 3, 'three records');
    await w.stop();
    expect(sender.sent.map((r) => JSON.parse(String(r.value)).seq)).toEqual([101, 102, 103]);
  });

  it('validates every offset before writing anything, and leaves nothing behind on failure', async () => {
    const store = new MemoryOffsetStore();
    await store.write('gen', [at(7)]);
    const { w } = worker(store);
    await w.start();
    await expect(
      w.createConnector('gen', config(), {
        offsets: [at(1), { partition: { task: 'zero', sequence: 0 }, offset: { seq: 'x' } }],
      }),
    ).rejects.toMatchObject({
      code: 'OFFSET_DECODE',
      message: expect.stringMatching(
        /offsets\[1\]\.partition\.task: expected number, got "zero".*offsets\[1\]\.offset\.seq: expected number, got "x"/,
      ),
    });
    expect(w.connectorNames()).toEqual([]);
    expect(await store.read('gen')).toEqual([at(7)]);
  });

  const steps: CreateStep[] = ['validate-config', 'validate-offsets', 'register', 'write-offsets', 'start'];
  it.each(steps)('leaves no connector and no offsets when step "%s" fails', async (failing) => {
    const seen: CreateStep[] = [];
    let armed = true;
    const { w, store } = worker(new MemoryOffsetStore(), {
      onCreateStep: (step) => {
        seen.push(step);
        if (armed && step === failing) throw new Error(`injected failure at ${step}`);
      },
    });
    await w.start();
    await expect(w.createConnector('gen', config(), { offsets: [at(3)] })).rejects.toThrow(`injected failure at ${failing}`);
    expect(seen).toEqual(steps.slice(0, steps.indexOf(failing) + 1));
    expect(w.connectorNames()).toEqual([]);
    expect(w.connector('gen')).toBeUndefined();
    expect(await store.read('gen')).toEqual([]);
    expect(await store.connectors()).toEqual([]);
    // The name is free again.
    armed = false;
    await w.createConnector('gen', config({ 'max.records': '0' }));
    await w.stop();
  });

  it('puts back the offsets an earlier connector of the name left when a step after the wipe fails', async () => {
    const store = new MemoryOffsetStore();
    await store.write('gen', [at(7), at(8, 1)]);
    const { w } = worker(store, {
      onCreateStep: (step) => {
        if (step === 'start') throw new Error('injected failure at start');
      },
    });
    await w.start();
    await expect(w.createConnector('gen', config({ 'max.records': '20' }), { offsets: [at(3)] })).rejects.toThrow('injected');
    expect(w.connectorNames()).toEqual([]);
    expect(await store.read('gen')).toEqual([at(7), at(8, 1)]);
  });

  it('leaves nothing when the offset store or a sender fails (steps 4 and 5)', async () => {
    const store = new MemoryOffsetStore();
    const write = store.write.bind(store);
    let failWrites = true;
    store.write = async (connector, entries) => {
      if (failWrites && entries.some((e) => e.offset !== null)) throw new Error('offsets topic unavailable');
      return write(connector, entries);
    };
    const { w } = worker(store);
    await w.start();
    await expect(w.createConnector('gen', config(), { offsets: [at(3)] })).rejects.toThrow('offsets topic unavailable');
    expect(w.connectorNames()).toEqual([]);
    expect(await store.read('gen')).toEqual([]);
    failWrites = false;

    const failing = worker(store, {
      createSender: async (): Promise<RecordSender> => {
        throw new Error('broker unreachable');
      },
    });
    await failing.w.start();
    await expect(failing.w.createConnector('gen', config(), { offsets: [at(3)] })).rejects.toThrow('broker unreachable');
    expect(failing.w.connectorNames()).toEqual([]);
    expect(await store.read('gen')).toEqual([]);
  });

  it('puts the earlier offsets back when the write of the given ones fails after it landed (its answer lost)', async () => {
    const store = new MemoryOffsetStore();
    await store.write('gen', [at(1, 5)]);
    const write = store.write.bind(store);
    let failWrites = true;
    store.write = async (connector, entries) => {
      await write(connector, entries);
      if (failWrites && entries.some((e) => e.offset !== null)) throw new Error('no answer from the offsets topic');
    };
    const { w } = worker(store);
    await w.start();
    await expect(w.createConnector('gen', config(), { offsets: [at(3)] })).rejects.toThrow('no answer from the offsets topic');
    failWrites = false;
    expect(w.connectorNames()).toEqual([]);
    expect(await store.read('gen')).toEqual([at(1, 5)]);
    await w.stop();
  });

  it('lets exactly one of two concurrent creates of a name win; the stored offsets are the winner’s', async () => {
    const store = new MemoryOffsetStore();
    await store.write('gen', [at(1, 5)]);
    const { w } = worker(store);
    await w.start();
    const results = await Promise.allSettled([
      w.createConnector('gen', config(), { offsets: [at(10)], initialState: 'STOPPED' }),
      w.createConnector('gen', config(), { offsets: [at(20), at(21, 1)], initialState: 'STOPPED' }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'CONNECTOR_EXISTS' });
    expect(await store.read('gen')).toEqual([at(10)]);
    // The same race through a delete: a create issued while the name is still being deleted loses.
    const again = await Promise.allSettled([
      w.deleteConnector('gen'),
      w.createConnector('gen', config(), { offsets: [at(30)], initialState: 'STOPPED' }),
    ]);
    expect(again.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
    expect(await store.read('gen')).toEqual([at(10)]);
    await w.stop();
  });

  it("keeps a deleted connector's offsets for a plain create, and wipes them for a create with offsets (as Kafka Connect)", async () => {
    const { w, store, sender } = worker();
    await w.start();
    await w.createConnector('gen', config({ partitions: '2', 'max.records': '4' }));
    await until(() => sender.sent.length === 4, 'four records');
    await w.deleteConnector('gen');
    expect(await store.read('gen')).toEqual([at(2), at(2, 1)]);

    await w.createConnector('gen', config({ partitions: '2', 'max.records': '6' }));
    await until(() => sender.sent.length === 6, 'two more records');
    await w.deleteConnector('gen');
    // A plain create resumed from the remnants: only records 5 and 6 were new.
    expect(sender.sent.slice(4).map((r) => JSON.parse(String(r.value)).seq)).toEqual([3, 3]);
    expect(await store.read('gen')).toEqual([at(3), at(3, 1)]);

    await w.createConnector('gen', config({ partitions: '2' }), { offsets: [at(50)], initialState: 'STOPPED' });
    expect(await store.read('gen')).toEqual([at(50)]);
    await w.stop();
  });
});

describe('Worker.stop', () => {
  it('stops once when called twice (a signal during start-up and the start-up itself): the store and adapters close once', async () => {
    let closes = 0;
    let storeStops = 0;
    class CountingStore extends MemoryOffsetStore {
      override async stop(): Promise<void> {
        storeStops++;
      }
    }
    const { w } = worker(new CountingStore(), {
      close: async () => {
        closes++;
      },
    });
    await w.start();
    await w.createConnector('a', config());
    const first = w.stop();
    const second = w.stop();
    await Promise.all([first, second]);
    await w.stop();
    expect({ closes, storeStops }).toEqual({ closes: 1, storeStops: 1 });
    expect(w.connectorNames()).toEqual([]);
  });

  /** A memory store whose writes fail once `broken` is set, as a disk that went away would. */
  class BreakableStore extends MemoryOffsetStore {
    broken = false;
    override async write(connector: string, entries: readonly OffsetEntry[]): Promise<void> {
      if (this.broken) throw new Error('EROFS: read-only file system');
      await super.write(connector, entries);
    }
  }

  function recordingLogger() {
    const lines: Array<{ level: string; fields: object; message?: string }> = [];
    const logger = {
      debug: (fields: object, message?: string) => lines.push({ level: 'debug', fields, message }),
      info: (fields: object, message?: string) => lines.push({ level: 'info', fields, message }),
      warn: (fields: object, message?: string) => lines.push({ level: 'warn', fields, message }),
      error: (fields: object, message?: string) => lines.push({ level: 'error', fields, message }),
      child: () => logger,
    };
    return { lines, logger };
  }

  it('stops everything, logs an ERROR and rejects naming the task when a final offset flush fails', async () => {
    const store = new BreakableStore();
    const { lines, logger } = recordingLogger();
    const { w, sender } = worker(store, { logger, config: { 'offset.flush.interval.ms': '600000' } });
    await w.start();
    await w.createConnector('gen', config());
    await until(() => sender.sent.length === 5, 'five records');
    store.broken = true;
    const error = await w.stop().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'OFFSET_FLUSH_FAILED', retriable: false });
    expect((error as Error).message).toContain('The final offset flush failed for task(s) gen-0');
    expect((error as Error).message).toContain('EROFS: read-only file system');
    const final = lines.find((l) => (l.fields as { event?: string }).event === 'offsets.flush.final.failed');
    expect(final?.level).toBe('error');
    expect(final?.message).toContain('Final offset flush of task gen-0 failed');
    expect(final?.message).not.toContain('retrying');
    expect(lines.some((l) => l.level === 'warn' && String(l.message).includes('retrying at the next flush'))).toBe(false);
    expect(w.connectorNames()).toEqual([]);
    expect(await store.read('gen')).toEqual([]);
  });

  it('resolves when the final offset flush succeeds', async () => {
    const { w, store, sender } = worker(new BreakableStore(), { config: { 'offset.flush.interval.ms': '600000' } });
    await w.start();
    await w.createConnector('gen', config());
    await until(() => sender.sent.length === 5, 'five records');
    await w.stop();
    expect(await store.read('gen')).toEqual([at(5)]);
  });
});
