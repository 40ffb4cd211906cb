/**
 * Kafka Connect's record formats for the cluster's config topic (`KafkaConfigBackingStore`) and
 * status topic (`KafkaStatusBackingStore`), with its internal `JsonConverter` (schemas disabled):
 * how a record becomes a change, and how changes fold into the cluster's state, as Connect
 * applies them on read. Pure: no I/O, no logging; what cannot be used is returned as a problem
 * for the store to report with the record's topic, partition and offset.
 */

import type {
  ClusterConfigSnapshot,
  LoggerLevelRequest,
  RestartRequest,
  StatusEntry,
  StoredStatusState,
  TaskConfigs,
  TaskRef,
} from '../runtime/distributed/ports.js';
import type { TargetState } from '../runtime/herder.js';

type Config = Readonly<Record<string, string>>;

/** What one config topic record means, or why it was not used. */
export type ConfigChange =
  | { readonly kind: 'connector-config'; readonly connector: string; readonly config: Config }
  | { readonly kind: 'connector-removed'; readonly connector: string }
  | { readonly kind: 'target-state'; readonly connector: string; readonly state: TargetState }
  | { readonly kind: 'target-state-removed'; readonly connector: string }
  | { readonly kind: 'task-config'; readonly task: TaskRef; readonly config: Config }
  | { readonly kind: 'tasks-commit'; readonly connector: string; readonly tasks: number }
  /** `tasks-fencing-<name>` (KIP-618): the task ids below `tasks` were fenced before the latest task configs started. */
  | { readonly kind: 'task-count'; readonly connector: string; readonly tasks: number }
  | {
      readonly kind: 'restart-request';
      readonly connector: string;
      readonly includeTasks: boolean;
      readonly onlyFailed: boolean;
      /** Fields that were missing or not booleans and were taken as `false`, as Connect does. */
      readonly defaulted: readonly string[];
    }
  /** `logger-cluster-<namespace>` (KIP-976): every worker sets the namespace's level when it reads this. */
  | { readonly kind: 'logger-level'; readonly namespace: string; readonly level: string }
  /** A record Connect writes that Tributary does not use (the session key). */
  | { readonly kind: 'ignored'; readonly key: string }
  /** A record that cannot be used: `problem` says what was wrong. */
  | { readonly kind: 'invalid'; readonly key: string | null; readonly problem: string };

/** What one status topic record means, or why it was not used. */
export type StatusChange =
  | { readonly kind: 'connector-status'; readonly connector: string; readonly status: StatusEntry }
  | { readonly kind: 'connector-status-removed'; readonly connector: string }
  | { readonly kind: 'task-status'; readonly task: TaskRef; readonly status: StatusEntry }
  | { readonly kind: 'task-status-removed'; readonly task: TaskRef }
  | { readonly kind: 'topic'; readonly connector: string; readonly topic: string; readonly task: number }
  | { readonly kind: 'topic-removed'; readonly connector: string; readonly topic: string }
  | { readonly kind: 'invalid'; readonly key: string | null; readonly problem: string };

/** Key prefixes of the config topic, as `KafkaConfigBackingStore` names them. */
export const CONFIG_KEYS = {
  connector: (name: string): string => `connector-${name}`,
  task: (task: TaskRef): string => `task-${task.connector}-${task.task}`,
  commit: (name: string): string => `commit-${name}`,
  targetState: (name: string): string => `target-state-${name}`,
  restart: (name: string): string => `restart-connector-${name}`,
  taskCount: (name: string): string => `tasks-fencing-${name}`,
  loggerLevel: (namespace: string): string => `logger-cluster-${namespace}`,
} as const;

/** Keys of the status topic, as `KafkaStatusBackingStore` names them. */
export const STATUS_KEYS = {
  connector: (name: string): string => `status-connector-${name}`,
  task: (task: TaskRef): string => `status-task-${task.connector}-${task.task}`,
  topic: (connector: string, topic: string): string => `status-topic-${topic}:connector-${connector}`,
} as const;

/** Config topic keys Connect writes that carry nothing Tributary uses; kept in the topic, skipped on read. */
const IGNORED_CONFIG_KEYS = ['session-key'];

const STORED_STATES: readonly StoredStatusState[] = [
  'UNASSIGNED',
  'RUNNING',
  'PAUSED',
  'FAILED',
  'RESTARTING',
  'STOPPED',
  'DESTROYED',
];

/** `{"properties": config}`: a connector's or a task's config record. */
export function configValue(config: Config): string {
  return JSON.stringify({ properties: config });
}

/** `{"tasks": n}`: the commit record that makes a connector's task configs current. */
export function commitValue(tasks: number): string {
  return JSON.stringify({ tasks });
}

/**
 * A target-state record. STOPPED is written as `state` PAUSED (older workers know no STOPPED)
 * and `state.v2` STOPPED; RUNNING is Connect's `STARTED`.
 */
export function targetStateValue(state: TargetState): string {
  const v2 = state === 'RUNNING' ? 'STARTED' : state;
  return JSON.stringify({ state: v2 === 'STOPPED' ? 'PAUSED' : v2, 'state.v2': v2 });
}

/** `{"task-count": n}`: a task count record (KIP-618 zombie fencing). */
export function taskCountValue(tasks: number): string {
  return JSON.stringify({ 'task-count': tasks });
}

/** `{"include-tasks": b, "only-failed": b}`: a restart request. */
export function restartValue(request: { readonly includeTasks: boolean; readonly onlyFailed: boolean }): string {
  return JSON.stringify({ 'include-tasks': request.includeTasks, 'only-failed': request.onlyFailed });
}

/** `{"level": "DEBUG"}`: a cluster-wide logger level (KIP-976). */
export function loggerLevelValue(level: string): string {
  return JSON.stringify({ level });
}

/** A connector's or task's status record; null (a tombstone) for DESTROYED, as Connect writes it. */
export function statusValue(status: StatusEntry): string | null {
  if (status.state === 'DESTROYED') return null;
  return JSON.stringify({
    state: status.state,
    trace: status.trace ?? null,
    worker_id: status.workerId,
    generation: status.generation,
    ...(status.version === undefined ? {} : { version: status.version }),
  });
}

/** A KIP-558 active-topic record: `{"topic": {"name", "connector", "task", "discoverTimestamp"}}`. */
export function topicStatusValue(connector: string, topic: string, task: number, discoverTimestamp: number): string {
  return JSON.stringify({ topic: { name: topic, connector, task, discoverTimestamp } });
}

/** Reads one config topic record as `KafkaConfigBackingStore` does. */
export function parseConfigRecord(key: string | null, value: Buffer | string | null): ConfigChange {
  if (key === null) return { kind: 'invalid', key, problem: 'the key is null' };
  const parsed = parseJson(value);
  if ('problem' in parsed) return { kind: 'invalid', key, problem: parsed.problem };
  const json = parsed.value;
  // Same order of prefix tests as Connect: `target-state-` before `task-`, `connector-` before `commit-`.
  if (key.startsWith('target-state-')) {
    const connector = key.slice('target-state-'.length);
    if (json === null) return { kind: 'target-state-removed', connector };
    return parseTargetState(key, connector, json);
  }
  if (key.startsWith('connector-')) {
    const connector = key.slice('connector-'.length);
    if (json === null) return { kind: 'connector-removed', connector };
    const config = properties(json);
    if (typeof config === 'string') return { kind: 'invalid', key, problem: config };
    return { kind: 'connector-config', connector, config };
  }
  if (key.startsWith('task-')) {
    const task = parseTaskKey(key, 'task-');
    if (task === undefined) {
      return { kind: 'invalid', key, problem: "the key is not 'task-<connector>-<task number>'" };
    }
    if (json === null) return { kind: 'invalid', key, problem: 'a task config must not be null (tombstone)' };
    const config = properties(json);
    if (typeof config === 'string') return { kind: 'invalid', key, problem: config };
    return { kind: 'task-config', task, config };
  }
  if (key.startsWith('commit-')) {
    const connector = key.slice('commit-'.length);
    if (!isObject(json)) return { kind: 'invalid', key, problem: `a commit must be an object, got ${describe(json)}` };
    const tasks = json.tasks;
    if (typeof tasks !== 'number' || !Number.isInteger(tasks) || tasks < 0 || tasks > 2 ** 31 - 1) {
      return { kind: 'invalid', key, problem: `'tasks' must be a non-negative integer, got ${describe(tasks)}` };
    }
    return { kind: 'tasks-commit', connector, tasks };
  }
  if (key.startsWith('tasks-fencing-')) {
    const connector = key.slice('tasks-fencing-'.length);
    if (!isObject(json)) return { kind: 'invalid', key, problem: `a task count record must be an object, got ${describe(json)}` };
    const tasks = json['task-count'];
    if (typeof tasks !== 'number' || !Number.isInteger(tasks) || tasks < 0 || tasks > 2 ** 31 - 1) {
      return { kind: 'invalid', key, problem: `'task-count' must be a non-negative integer, got ${describe(tasks)}` };
    }
    return { kind: 'task-count', connector, tasks };
  }
  if (key.startsWith('restart-connector-')) {
    const connector = key.slice('restart-connector-'.length);
    if (!isObject(json)) {
      return { kind: 'invalid', key, problem: `a restart request must be an object, got ${describe(json)}` };
    }
    const defaulted: string[] = [];
    const flag = (field: string): boolean => {
      const v = json[field];
      if (typeof v === 'boolean') return v;
      defaulted.push(field);
      return false;
    };
    const includeTasks = flag('include-tasks');
    const onlyFailed = flag('only-failed');
    return { kind: 'restart-request', connector, includeTasks, onlyFailed, defaulted };
  }
  if (key.startsWith('logger-cluster-')) {
    const namespace = key.slice('logger-cluster-'.length);
    if (namespace === '') return { kind: 'invalid', key, problem: 'the key names no logger' };
    if (!isObject(json)) return { kind: 'invalid', key, problem: `a logger level must be an object, got ${describe(json)}` };
    const level = json.level;
    if (typeof level !== 'string') return { kind: 'invalid', key, problem: `'level' must be a string, got ${describe(level)}` };
    return { kind: 'logger-level', namespace, level };
  }
  if (IGNORED_CONFIG_KEYS.includes(key)) return { kind: 'ignored', key };
  return { kind: 'invalid', key, problem: 'unknown key (not a record type of the config topic)' };
}

/** Reads one status topic record as `KafkaStatusBackingStore` does. */
export function parseStatusRecord(key: string | null, value: Buffer | string | null): StatusChange {
  if (key === null) return { kind: 'invalid', key, problem: 'the key is null' };
  if (key.startsWith('status-connector-')) {
    const connector = key.slice('status-connector-'.length);
    if (connector === '') return { kind: 'invalid', key, problem: 'the connector name is empty' };
    const parsed = parseJson(value);
    if ('problem' in parsed) return { kind: 'invalid', key, problem: parsed.problem };
    if (parsed.value === null) return { kind: 'connector-status-removed', connector };
    const status = parseStatus(parsed.value);
    if (typeof status === 'string') return { kind: 'invalid', key, problem: status };
    return { kind: 'connector-status', connector, status };
  }
  if (key.startsWith('status-task-')) {
    const task = parseTaskKey(key, 'status-task-');
    if (task === undefined) {
      return { kind: 'invalid', key, problem: "the key is not 'status-task-<connector>-<task number>'" };
    }
    const parsed = parseJson(value);
    if ('problem' in parsed) return { kind: 'invalid', key, problem: parsed.problem };
    if (parsed.value === null) return { kind: 'task-status-removed', task };
    const status = parseStatus(parsed.value);
    if (typeof status === 'string') return { kind: 'invalid', key, problem: status };
    return { kind: 'task-status', task, status };
  }
  if (key.startsWith('status-topic-')) {
    const rest = key.slice('status-topic-'.length);
    const at = rest.indexOf(':connector-');
    const topic = at < 0 ? '' : rest.slice(0, at);
    const connector = at < 0 ? '' : rest.slice(at + ':connector-'.length);
    if (topic === '' || connector === '') {
      return { kind: 'invalid', key, problem: "the key is not 'status-topic-<topic>:connector-<connector>'" };
    }
    const parsed = parseJson(value);
    if ('problem' in parsed) return { kind: 'invalid', key, problem: parsed.problem };
    if (parsed.value === null) return { kind: 'topic-removed', connector, topic };
    const inner = isObject(parsed.value) ? parsed.value.topic : undefined;
    if (!isObject(inner)) {
      return { kind: 'invalid', key, problem: `expected {"topic": {...}}, got ${describe(parsed.value)}` };
    }
    const task = inner.task;
    if (typeof task !== 'number' || !Number.isInteger(task) || task < 0) {
      return { kind: 'invalid', key, problem: `'topic.task' must be a non-negative integer, got ${describe(task)}` };
    }
    return { kind: 'topic', connector, topic, task };
  }
  return { kind: 'invalid', key, problem: 'unknown key (not a record type of the status topic)' };
}

/** Why {@link ConfigTopicState.apply} did not use a change, for the store to log. */
export interface ApplyNote {
  readonly level: 'warn' | 'debug';
  readonly message: string;
}

/**
 * The config topic folded as `KafkaConfigBackingStore` folds it:
 * - connector configs apply at once; a connector config with no target state is RUNNING;
 * - task configs wait for their connector's `commit-*` record; at the commit, if tasks 0…n-1 are
 *   all among the waiting records they become the connector's task configs, otherwise the
 *   connector is marked inconsistent (compaction, or a writer that died mid-write) and keeps
 *   its previous committed configs; either way the waiting records are dropped;
 * - a commit for a connector with no config (deleted, then compacted) is ignored;
 * - a connector tombstone removes its config and tasks; a target-state tombstone removes the
 *   state (the connector, if it still has a config, is RUNNING again);
 * - a target state may come before its connector's config (an initial state) and is kept;
 * - a commit makes the connector pending fencing (KIP-618) until a `tasks-fencing-*` record comes
 *   after it; task count records outlive their connector (a deleted connector's zombies must be
 *   fenced when one of the same name is created again).
 */
export class ConfigTopicState {
  private offset = 0n;
  private readonly connectors = new Map<string, Config>();
  private readonly targetStates = new Map<string, TargetState>();
  private readonly taskConfigs = new Map<string, TaskConfigs>();
  private readonly deferred = new Map<string, Map<number, Config>>();
  private readonly inconsistent = new Set<string>();
  private readonly restartRequests: RestartRequest[] = [];
  private readonly loggerLevels: LoggerLevelRequest[] = [];
  private readonly taskCountRecords = new Map<string, number>();
  private readonly pendingFencing = new Set<string>();
  private cached: ClusterConfigSnapshot | undefined;

  /**
   * Folds the change of the record at `offset` in. Restart requests and logger levels are only
   * kept when `afterStart` (Connect acts on those read after its store started).
   */
  apply(change: ConfigChange, offset: bigint, afterStart = true): ApplyNote | undefined {
    if (offset + 1n > this.offset) this.offset = offset + 1n;
    this.cached = undefined;
    switch (change.kind) {
      case 'connector-config':
        this.connectors.set(change.connector, change.config);
        return undefined;
      case 'connector-removed':
        this.removeConnector(change.connector);
        return undefined;
      case 'target-state':
        this.targetStates.set(change.connector, change.state);
        return undefined;
      case 'target-state-removed':
        this.targetStates.delete(change.connector);
        return undefined;
      case 'task-config': {
        let waiting = this.deferred.get(change.task.connector);
        if (waiting === undefined) {
          waiting = new Map();
          this.deferred.set(change.task.connector, waiting);
        }
        waiting.set(change.task.task, change.config);
        return undefined;
      }
      case 'tasks-commit':
        return this.commit(change.connector, change.tasks);
      case 'task-count':
        this.taskCountRecords.set(change.connector, change.tasks);
        this.pendingFencing.delete(change.connector);
        return undefined;
      case 'logger-level':
        if (afterStart) this.loggerLevels.push({ namespace: change.namespace, level: change.level, offset });
        return undefined;
      case 'restart-request':
        if (afterStart) {
          this.restartRequests.push({
            connector: change.connector,
            includeTasks: change.includeTasks,
            onlyFailed: change.onlyFailed,
            offset,
          });
        }
        return undefined;
      case 'ignored':
      case 'invalid':
        return undefined;
    }
  }

  /** An immutable view of everything folded in so far. */
  snapshot(): ClusterConfigSnapshot {
    if (this.cached !== undefined) return this.cached;
    const targetStates = new Map<string, TargetState>(this.targetStates);
    for (const name of this.connectors.keys()) if (!targetStates.has(name)) targetStates.set(name, 'RUNNING');
    const snapshot: ClusterConfigSnapshot = {
      offset: this.offset,
      connectors: new Map(this.connectors),
      targetStates,
      taskConfigs: new Map(this.taskConfigs),
      inconsistent: new Set(this.inconsistent),
      restartRequests: [...this.restartRequests],
      loggerLevels: [...this.loggerLevels],
      taskCountRecords: new Map(this.taskCountRecords),
      pendingFencing: new Set(this.pendingFencing),
    };
    this.cached = snapshot;
    return snapshot;
  }

  private commit(connector: string, tasks: number): ApplyNote | undefined {
    const waiting = this.deferred.get(connector);
    this.deferred.delete(connector);
    if (!this.connectors.has(connector)) {
      // Deleted before these task configs were written, and compaction removed the connector's
      // config and tombstone: nothing to apply them to.
      this.removeConnector(connector);
      return { level: 'debug', message: `Ignoring task configs of connector '${connector}', which has no config` };
    }
    const configs: Config[] = [];
    for (let i = 0; i < tasks; i++) {
      const config = waiting?.get(i);
      if (config === undefined) {
        this.inconsistent.add(connector);
        return {
          level: 'warn',
          message:
            `Commit of ${tasks} task config(s) for connector '${connector}' finds no config for task ${i}: ` +
            `the connector is inconsistent and keeps its previous task configs until they are written again`,
        };
      }
      configs.push(config);
    }
    this.taskConfigs.set(connector, configs);
    this.inconsistent.delete(connector);
    this.pendingFencing.add(connector);
    return undefined;
  }

  private removeConnector(connector: string): void {
    this.connectors.delete(connector);
    this.taskConfigs.delete(connector);
    this.deferred.delete(connector);
    this.inconsistent.delete(connector);
    this.pendingFencing.delete(connector);
  }
}

/**
 * Statuses folded as `KafkaStatusBackingStore` reads them, with `putSafe`'s rule applied on read
 * to what Kafka Connect writes with it, a worker's UNASSIGNED as it stops a task: from another
 * worker at an older generation than the stored status it is ignored (a zombie's late write).
 * Every other state is taken as it comes, as Connect's plain `put` does: a recreated group
 * restarts its generations, and the new owners' statuses must still show. And, as Connect does, a task's UNASSIGNED at the same or an older
 * generation than its stored RUNNING is ignored (a stale write from a rebalance). A connector
 * status tombstone removes the connector's task statuses too.
 */
export class StatusTopicState {
  private readonly connectors = new Map<string, StatusEntry>();
  private readonly tasks = new Map<string, Map<number, StatusEntry>>();
  private readonly topics = new Map<string, Map<string, number>>();

  apply(change: StatusChange): ApplyNote | undefined {
    switch (change.kind) {
      case 'connector-status': {
        const current = this.connectors.get(change.connector);
        const stale = change.status.state === 'UNASSIGNED' ? staleness(current, change.status) : undefined;
        if (stale !== undefined)
          return { level: 'warn', message: `Ignoring status of connector '${change.connector}': ${stale}` };
        this.connectors.set(change.connector, change.status);
        return undefined;
      }
      case 'connector-status-removed':
        this.connectors.delete(change.connector);
        this.tasks.delete(change.connector);
        return undefined;
      case 'task-status': {
        const { connector, task } = change.task;
        let tasks = this.tasks.get(connector);
        const current = tasks?.get(task);
        const stale = change.status.state === 'UNASSIGNED' ? staleness(current, change.status) : undefined;
        if (stale !== undefined) {
          return { level: 'warn', message: `Ignoring status of task ${connector}-${task}: ${stale}` };
        }
        if (
          change.status.state === 'UNASSIGNED' &&
          current?.state === 'RUNNING' &&
          current.generation >= change.status.generation
        ) {
          return {
            level: 'debug',
            message: `Ignoring UNASSIGNED of task ${connector}-${task} (generation ${change.status.generation}) over RUNNING at generation ${current.generation}`,
          };
        }
        if (tasks === undefined) {
          tasks = new Map();
          this.tasks.set(connector, tasks);
        }
        tasks.set(task, change.status);
        return undefined;
      }
      case 'task-status-removed': {
        const tasks = this.tasks.get(change.task.connector);
        tasks?.delete(change.task.task);
        if (tasks?.size === 0) this.tasks.delete(change.task.connector);
        return undefined;
      }
      case 'topic': {
        let topics = this.topics.get(change.connector);
        if (topics === undefined) {
          topics = new Map();
          this.topics.set(change.connector, topics);
        }
        topics.set(change.topic, change.task);
        return undefined;
      }
      case 'topic-removed': {
        const topics = this.topics.get(change.connector);
        topics?.delete(change.topic);
        if (topics?.size === 0) this.topics.delete(change.connector);
        return undefined;
      }
      case 'invalid':
        return undefined;
    }
  }

  connector(name: string): StatusEntry | undefined {
    return this.connectors.get(name);
  }

  task(task: TaskRef): StatusEntry | undefined {
    return this.tasks.get(task.connector)?.get(task.task);
  }

  /** Task statuses of the connector, by task number (ascending). */
  connectorTasks(connector: string): ReadonlyMap<number, StatusEntry> {
    return new Map([...(this.tasks.get(connector) ?? new Map<number, StatusEntry>())].sort(([a], [b]) => a - b));
  }

  /** Active topics of the connector, sorted. */
  connectorTopics(connector: string): string[] {
    return [...(this.topics.get(connector)?.keys() ?? [])].sort();
  }
}

/** Why `next` must not replace `current` (putSafe's rule), or undefined if it may. */
function staleness(current: StatusEntry | undefined, next: StatusEntry): string | undefined {
  if (current === undefined || current.workerId === next.workerId || current.generation <= next.generation) return undefined;
  return (
    `${next.state} from worker ${next.workerId} at generation ${next.generation} is older than the stored ` +
    `${current.state} from worker ${current.workerId} at generation ${current.generation} (a late write from a worker ` +
    `that stopped work it no longer owns)`
  );
}

function parseStatus(json: unknown): StatusEntry | string {
  if (!isObject(json)) return `a status must be an object, got ${describe(json)}`;
  const { state, trace, worker_id: workerId, generation, version } = json;
  if (typeof state !== 'string' || !(STORED_STATES as readonly string[]).includes(state)) {
    return `'state' must be one of ${STORED_STATES.join(', ')}, got ${describe(state)}`;
  }
  if (typeof workerId !== 'string') return `'worker_id' must be a string, got ${describe(workerId)}`;
  if (typeof generation !== 'number' || !Number.isInteger(generation)) {
    return `'generation' must be an integer, got ${describe(generation)}`;
  }
  if (trace !== undefined && trace !== null && typeof trace !== 'string') {
    return `'trace' must be a string or null, got ${describe(trace)}`;
  }
  if (version !== undefined && version !== null && typeof version !== 'string') {
    return `'version' must be a string or null, got ${describe(version)}`;
  }
  return {
    state: state as StoredStatusState,
    workerId,
    generation,
    ...(typeof trace === 'string' ? { trace } : {}),
    ...(typeof version === 'string' ? { version } : {}),
  };
}

function parseTargetState(key: string, connector: string, json: unknown): ConfigChange {
  if (!isObject(json)) return { kind: 'invalid', key, problem: `a target state must be an object, got ${describe(json)}` };
  // `state.v2` first (it can say STOPPED); a record from an older worker has only `state`.
  const v2 = json['state.v2'];
  const raw = typeof v2 === 'string' ? v2 : json.state;
  const state = raw === 'STARTED' ? 'RUNNING' : raw === 'PAUSED' || raw === 'STOPPED' ? raw : undefined;
  if (state === undefined) {
    return {
      kind: 'invalid',
      key,
      problem: `'state.v2' or 'state' must be STARTED, PAUSED or STOPPED, got ${describe(raw)}`,
    };
  }
  return { kind: 'target-state', connector, state };
}

/**
 * `task-<connector>-<n>` / `status-task-<connector>-<n>`: the task number follows the last '-',
 * so connector names may contain '-'.
 */
function parseTaskKey(key: string, prefix: string): TaskRef | undefined {
  const rest = key.slice(prefix.length);
  const dash = rest.lastIndexOf('-');
  if (dash <= 0) return undefined;
  const digits = rest.slice(dash + 1);
  if (!/^\d+$/.test(digits)) return undefined;
  const task = Number(digits);
  if (task > 2 ** 31 - 1) return undefined;
  return { connector: rest.slice(0, dash), task };
}

function properties(json: unknown): Config | string {
  if (!isObject(json)) return `expected {"properties": {...}}, got ${describe(json)}`;
  const props = json.properties;
  if (!isObject(props)) return `'properties' must be an object of strings, got ${describe(props)}`;
  for (const [k, v] of Object.entries(props)) {
    if (typeof v !== 'string') return `property '${k}' must be a string, got ${describe(v)}`;
  }
  return props as Config;
}

function parseJson(value: Buffer | string | null): { value: unknown } | { problem: string } {
  if (value === null) return { value: null };
  const text = typeof value === 'string' ? value : value.toString('utf8');
  try {
    return { value: JSON.parse(text) };
  } catch {
    return { problem: `the value is not JSON: ${abbreviate(text)}` };
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  return abbreviate(JSON.stringify(v));
}

function abbreviate(text: string): string {
  return text.length > 80 ? `${text.slice(0, 80)}...` : text;
}
