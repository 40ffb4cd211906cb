/**
 * In-memory fakes of the distributed herder's ports (config topic, status topic, worker group)
 * and of the local Worker, so DistributedHerder's logic is tested without Kafka: a test writes
 * records "to the topic", decides when a worker reads them, makes reads fail, and drives joins.
 */
import { silentLogger } from '../../src/api/logger.js';
import { DistributedHerder, type DistributedHerderOptions } from '../../src/runtime/distributed/distributed-herder.js';
import { encodeAssignment } from '../../src/runtime/distributed/member-protocol.js';
import type {
  ClusterConfigSnapshot,
  ConfigTopicStore,
  StatusEntry,
  StatusTopicStore,
  TaskConfigs,
  TaskRef,
  WorkerGroup,
  WorkerGroupHandler,
  WorkItems,
} from '../../src/runtime/distributed/ports.js';
import type { TargetState, Worker } from '../../src/runtime/worker.js';

/** The config topic as records written to it; each worker's store reads it up to where it has read. */
export class FakeConfigTopic {
  connectors = new Map<string, Readonly<Record<string, string>>>();
  targetStates = new Map<string, TargetState>();
  taskConfigs = new Map<string, TaskConfigs>();
  taskCountRecords = new Map<string, number>();
  /** Offset of each connector's last commit record and last task count record. */
  private readonly commits = new Map<string, number>();
  private readonly fences = new Map<string, number>();
  offset = 0;

  putConnectorConfig(name: string, config: Readonly<Record<string, string>>): void {
    this.connectors.set(name, { ...config });
    this.offset++;
  }
  putTaskConfigs(name: string, configs: TaskConfigs): void {
    this.taskConfigs.set(name, configs);
    this.commits.set(name, this.offset);
    this.offset += configs.length + 1;
  }
  putTaskCountRecord(name: string, tasks: number): void {
    this.taskCountRecords.set(name, tasks);
    this.fences.set(name, this.offset);
    this.offset++;
  }

  snapshot(): ClusterConfigSnapshot {
    const pendingFencing = new Set<string>();
    for (const [name, at] of this.commits) if (at > (this.fences.get(name) ?? -1)) pendingFencing.add(name);
    return {
      offset: BigInt(this.offset),
      connectors: new Map(this.connectors),
      targetStates: new Map(this.targetStates),
      taskConfigs: new Map(this.taskConfigs),
      inconsistent: new Set(),
      restartRequests: [],
      loggerLevels: [],
      taskCountRecords: new Map(this.taskCountRecords),
      pendingFencing,
    };
  }
}

/** One worker's config store over a {@link FakeConfigTopic}: writes go to the topic, snapshots show what was read. */
export class FakeConfigStore implements ConfigTopicStore {
  private seen: ClusterConfigSnapshot;
  private readonly listeners = new Set<(s: ClusterConfigSnapshot) => void>();
  /** How many of the next reads fail (the broker is down). */
  failReads = 0;
  reads = 0;
  /** Called before a write lands: lets a test interleave. */
  beforeWrite: (() => Promise<void>) | undefined;

  constructor(readonly topic: FakeConfigTopic) {
    this.seen = topic.snapshot();
  }
  async start(): Promise<ClusterConfigSnapshot> {
    return this.readToEnd();
  }
  async readToEnd(): Promise<ClusterConfigSnapshot> {
    this.reads++;
    await Promise.resolve();
    if (this.failReads > 0) {
      this.failReads--;
      throw new Error('the config topic cannot be read: broker not available');
    }
    const before = this.seen.offset;
    this.seen = this.topic.snapshot();
    // As the Kafka store: listeners hear of records read, not of reads that found none.
    if (this.seen.offset > before) for (const l of this.listeners) l(this.seen);
    return this.seen;
  }
  snapshot(): ClusterConfigSnapshot {
    return this.seen;
  }
  onChange(listener: (snapshot: ClusterConfigSnapshot) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  private async write(fn: () => void): Promise<void> {
    await this.beforeWrite?.();
    fn();
  }
  putConnectorConfig(name: string, config: Readonly<Record<string, string>>): Promise<void> {
    return this.write(() => this.topic.putConnectorConfig(name, config));
  }
  removeConnectorConfig(name: string): Promise<void> {
    return this.write(() => {
      this.topic.connectors.delete(name);
      this.topic.targetStates.delete(name);
      this.topic.offset++;
    });
  }
  putTargetState(name: string, state: TargetState): Promise<void> {
    return this.write(() => {
      this.topic.targetStates.set(name, state);
      this.topic.offset++;
    });
  }
  putTaskConfigs(name: string, configs: TaskConfigs): Promise<void> {
    return this.write(() => this.topic.putTaskConfigs(name, configs));
  }
  putTaskCountRecord(name: string, tasks: number): Promise<void> {
    return this.write(() => this.topic.putTaskCountRecord(name, tasks));
  }
  async putRestartRequest(): Promise<void> {}
  async putLoggerLevel(): Promise<void> {}
  async stop(): Promise<void> {}
}

export class FakeStatusStore implements StatusTopicStore {
  readonly connectors = new Map<string, StatusEntry>();
  readonly taskEntries = new Map<string, StatusEntry>();
  async start(): Promise<void> {}
  async readToEnd(): Promise<void> {}
  async putConnector(name: string, status: StatusEntry): Promise<void> {
    this.connectors.set(name, status);
  }
  async putTask(task: TaskRef, status: StatusEntry): Promise<void> {
    this.taskEntries.set(`${task.connector}-${task.task}`, status);
  }
  async putTopic(): Promise<void> {}
  async resetTopics(): Promise<void> {}
  async remove(): Promise<void> {}
  connector(name: string): StatusEntry | undefined {
    return this.connectors.get(name);
  }
  task(task: TaskRef): StatusEntry | undefined {
    return this.taskEntries.get(`${task.connector}-${task.task}`);
  }
  tasks(): ReadonlyMap<number, StatusEntry> {
    return new Map();
  }
  topics(): readonly string[] {
    return [];
  }
  async stop(): Promise<void> {}
}

/** A group whose joins the test hands over. */
export class FakeGroup implements WorkerGroup {
  handler: WorkerGroupHandler | undefined;
  readonly rejoins: string[] = [];
  /** Called for each rejoin asked for (a stopping herder waits for the join that says it leaves). */
  onRejoin: ((reason: string) => void) | undefined;
  async start(handler: WorkerGroupHandler): Promise<void> {
    this.handler = handler;
  }
  requestRejoin(reason: string): void {
    this.rejoins.push(reason);
    this.onRejoin?.(reason);
  }
  lastConfirmedAt(): number {
    return Date.now();
  }
  async leave(): Promise<void> {}
}

interface FakeTask {
  readonly id: number;
  placed: unknown;
  readonly runner: { status: { state: string; error?: unknown } };
}

/** What the herder uses of a Worker: placements and restarts are recorded, task states set by the test. */
export class FakeWorker {
  readonly options = { config: {} as Record<string, string> };
  readonly runners = new Map<string, { config: Readonly<Record<string, string>>; tasks: FakeTask[] }>();
  /** Every task start: by a placement (a new or changed config) or a restart, with the config it runs. */
  readonly starts: Array<{ connector: string; task: number; config: unknown; why: 'place' | 'restart' }> = [];
  readonly restarts: Array<{ connector: string; task: number }> = [];

  async start(): Promise<void> {}
  beginStop(): void {}
  async stop(): Promise<void> {}
  connectorNames(): string[] {
    return [...this.runners.keys()];
  }
  connector(name: string) {
    const r = this.runners.get(name);
    if (r === undefined) return undefined;
    return {
      tasks: r.tasks,
      activeTopics: new Set<string>(),
      status: () => ({
        name,
        connector: { state: 'RUNNING', workerId: 'w' },
        tasks: r.tasks.map((t) => ({ id: t.id, state: t.runner.status.state, workerId: 'w' })),
      }),
    };
  }
  async place(
    name: string,
    config: Readonly<Record<string, string>>,
    _target: TargetState,
    placement: { tasks: ReadonlyMap<number, unknown> },
  ): Promise<void> {
    const r = this.runners.get(name) ?? { config, tasks: [] };
    this.runners.set(name, r);
    r.config = config;
    const next: FakeTask[] = [];
    for (const [id, c] of placement.tasks) {
      const had = r.tasks.find((t) => t.id === id);
      if (had !== undefined && JSON.stringify(had.placed) === JSON.stringify(c)) next.push(had);
      else {
        next.push({ id, placed: c, runner: { status: { state: 'RUNNING' } } });
        this.starts.push({ connector: name, task: id, config: c, why: 'place' });
      }
    }
    r.tasks = next;
  }
  async unplace(name: string): Promise<void> {
    this.runners.delete(name);
  }
  async restartTask(name: string, id: number): Promise<void> {
    const t = this.runners.get(name)?.tasks.find((x) => x.id === id);
    if (t === undefined) throw new Error(`no task ${id} of ${name} here`);
    t.runner.status = { state: 'RUNNING' };
    this.restarts.push({ connector: name, task: id });
    this.starts.push({ connector: name, task: id, config: t.placed, why: 'restart' });
  }
  async checkConnector(_name: string, config: Readonly<Record<string, string>>) {
    return { passwords: new Set<string>(), connectorClass: class {}, parsed: config };
  }
}

export interface FakeNode {
  readonly herder: DistributedHerder;
  readonly config: FakeConfigStore;
  readonly status: FakeStatusStore;
  readonly group: FakeGroup;
  readonly worker: FakeWorker;
  readonly forwarded: Array<{ url: string; connector: string; task: number; hops: number }>;
  /** Hands the herder a join: `runs` is its share; `leader` whether it leads. */
  join(assignment: {
    generation?: number;
    leader: boolean;
    runs?: WorkItems;
    revoked?: WorkItems;
    leaderUrl?: string;
    members?: Array<{ workerId: string; url: string }>;
    configOffset?: bigint;
  }): Promise<void>;
}

/** A herder over fakes; `id` names the worker (`<id>:8083`). */
export async function fakeNode(
  topic: FakeConfigTopic,
  id: string,
  extra: Partial<DistributedHerderOptions> = {},
): Promise<FakeNode> {
  const config = new FakeConfigStore(topic);
  const status = new FakeStatusStore();
  const group = new FakeGroup();
  const worker = new FakeWorker();
  const forwarded: FakeNode['forwarded'] = [];
  const herder = new DistributedHerder({
    worker: worker as unknown as Worker,
    configStore: config,
    statusStore: status,
    group,
    identity: () => ({ workerId: `${id}:8083`, url: `http://${id}:8083` }),
    maxDelayMs: 0,
    sessionTimeoutMs: 60_000,
    leaderWaitMs: 1000,
    restartRemoteTask: async (url, connector, task, hops) => {
      forwarded.push({ url, connector, task, hops });
    },
    logger: silentLogger,
    statusIntervalMs: 3_600_000,
    ...extra,
  });
  await herder.start();
  const join: FakeNode['join'] = async (a) => {
    const handler = group.handler;
    if (handler === undefined) throw new Error('the herder did not join');
    const memberId = `${id}-member`;
    await handler.onJoined({
      generation: a.generation ?? 1,
      memberId,
      leaderId: a.leader ? memberId : 'another-member',
      assignment: encodeAssignment({
        version: 1,
        leaderWorkerId: a.leader ? `${id}:8083` : 'leader:8083',
        leaderUrl: a.leaderUrl ?? (a.leader ? `http://${id}:8083` : 'http://leader:8083'),
        configOffset: String(a.configOffset ?? topic.snapshot().offset),
        runs: {
          connectors: [...(a.runs?.connectors ?? [])],
          tasks: [...(a.runs?.tasks ?? [])].map((t) => ({ ...t })),
        },
        revoked: {
          connectors: [...(a.revoked?.connectors ?? [])],
          tasks: [...(a.revoked?.tasks ?? [])].map((t) => ({ ...t })),
        },
        delayMs: 0,
        members: a.members ?? [],
        held: [],
      }),
    });
  };
  // A stopping herder rejoins to say it leaves: the leader then gives it nothing.
  group.onRejoin = (reason) => {
    if (reason === 'leaving') setImmediate(() => void join({ leader: false }));
  };
  return { herder, config, status, group, worker, forwarded, join };
}

/** Waits (bounded) until `check` holds, letting timers and promises run. */
export async function until(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
