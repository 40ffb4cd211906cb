/**
 * The config and status topic stores against Apache Kafka Connect itself: a real Kafka Connect
 * distributed worker (the jars bench/connect/fetch.ts fetches) on the test broker.
 *
 * One way: Connect writes (create, pause, stop, resume, restart, reconfigure, delete over its
 * REST API) and the stores read its topics; what they read must equal what Connect's REST
 * reports, with no record left unread. The other way: the store writes a fresh config topic and
 * Connect, started on it, must report what was written.
 *
 * Without Maven or a JDK the file skips, except under CI=true, where it fails.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ConnectWorker, startConnectWorker } from '../../bench/connect/connect-worker.js';
import { checkJava, ensureConnectJars } from '../../bench/connect/fetch.js';
import { isTributaryError } from '../../src/api/errors.js';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import type { ClusterConfigSnapshot } from '../../src/runtime/distributed/ports.js';
import { KafkaConfigTopicStore } from '../../src/storage/kafka-config-topic-store.js';
import { KafkaStatusTopicStore } from '../../src/storage/kafka-status-topic-store.js';
import { describeKafka, requireKafkaBootstrap, testKafka, uniqueTopic } from '../helpers/kafka.js';

const FILE_SOURCE = 'org.apache.kafka.connect.file.FileStreamSourceConnector';

interface ConnectStatus {
  name: string;
  connector: { state: string; worker_id: string; trace?: string; version?: string };
  tasks: Array<{ id: number; state: string; worker_id: string; trace?: string; version?: string }>;
}

let setup: { java: string; libs: string; version: string } | undefined;
let unavailable: string | undefined;
let dir = '';
const workers: ConnectWorker[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tributary-cluster-topics-'));
  try {
    const [{ java }, jars] = await Promise.all([checkJava(), ensureConnectJars()]);
    setup = { java, libs: jars.libs, version: jars.version };
  } catch (e) {
    if (process.env.CI === 'true') throw e;
    unavailable = (e as Error).message;
  }
}, 300_000);

afterAll(async () => {
  await Promise.allSettled(workers.map((w) => w.stop()));
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

/** Starts `ConnectDistributed` with its config and status topics on the test broker; resolves once its REST API answers. */
async function startConnect(name: string, topics: { config: string; status: string; offsets: string }): Promise<ConnectWorker> {
  if (setup === undefined) throw new Error('no Kafka Connect');
  const worker = await startConnectWorker({
    mode: 'distributed',
    bootstrap: requireKafkaBootstrap(),
    timeoutMs: 60_000,
    properties: {
      'group.id': uniqueTopic(`${name}-group`),
      'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
      'value.converter': 'org.apache.kafka.connect.storage.StringConverter',
      'config.storage.topic': topics.config,
      'config.storage.replication.factor': 1,
      'status.storage.topic': topics.status,
      'status.storage.replication.factor': 1,
      'status.storage.partitions': 5,
      'offset.storage.topic': topics.offsets,
      'offset.storage.replication.factor': 1,
      'offset.storage.partitions': 1,
      'offset.flush.interval.ms': 1000,
      'rest.advertised.host.name': '127.0.0.1',
    },
  });
  workers.push(worker);
  return worker;
}

/** A REST call; retries 409 (rebalance in progress) for a while, returns status and JSON body. */
async function rest(
  worker: ConnectWorker,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await fetch(`${worker.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (res.status === 409 && Date.now() < deadline) {
      await sleep(250);
      continue;
    }
    return { status: res.status, json: text === '' ? undefined : JSON.parse(text) };
  }
}

async function ok(worker: ConnectWorker, method: string, path: string, body?: unknown): Promise<unknown> {
  const { status, json } = await rest(worker, method, path, body);
  expect(status, `${method} ${path}: ${JSON.stringify(json)}`).toBeLessThan(300);
  return json;
}

/** Waits until Connect's REST status of `name` satisfies `check`; returns it. */
async function statusWhen(worker: ConnectWorker, name: string, check: (s: ConnectStatus) => boolean): Promise<ConnectStatus> {
  const deadline = Date.now() + 30_000;
  let last: unknown;
  for (;;) {
    const { status, json } = await rest(worker, 'GET', `/connectors/${name}/status`);
    last = json;
    if (status === 200 && check(json as ConnectStatus)) return json as ConnectStatus;
    if (Date.now() > deadline) throw new Error(`status of ${name} never matched; last: ${JSON.stringify(last)}`);
    await sleep(200);
  }
}

const running = (s: ConnectStatus): boolean =>
  s.connector.state === 'RUNNING' && s.tasks.length === 1 && s.tasks.every((t) => t.state === 'RUNNING');

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function captureLogger(): { warnings: Array<{ obj: object; msg: string }>; warn(obj: object, msg: string): void } {
  const warnings: Array<{ obj: object; msg: string }> = [];
  return { warnings, warn: (obj, msg) => warnings.push({ obj, msg }) };
}

/** Reads the config topic to its end until `check` holds (Connect's writes land a moment after its REST answers). */
async function snapshotWhen(
  store: KafkaConfigTopicStore,
  check: (s: ClusterConfigSnapshot) => boolean,
): Promise<ClusterConfigSnapshot> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const snapshot = await store.readToEnd();
    if (check(snapshot) || Date.now() > deadline) return snapshot;
    await sleep(200);
  }
}

describeKafka('the config and status topics as Kafka Connect distributed writes and reads them', () => {
  it('reads what Kafka Connect wrote: configs, task configs, target states and statuses equal its REST answers', async () => {
    if (setup === undefined) {
      console.warn(`Kafka Connect unavailable, comparison not run: ${unavailable}`);
      return;
    }
    const topics = { config: uniqueTopic('cfg'), status: uniqueTopic('status'), offsets: uniqueTopic('offsets') };
    const input = join(dir, 'input.txt');
    await writeFile(input, 'one\ntwo\n');
    const dataTopic = uniqueTopic('data');
    const connect = await startConnect('connect-a', topics);

    const kafka = testKafka();
    const configLog = captureLogger();
    const statusLog = captureLogger();
    const config = new KafkaConfigTopicStore({ kafka, topic: topics.config, logger: configLog });
    const status = new KafkaStatusTopicStore({ kafka, topic: topics.status, logger: statusLog });
    const changes: ClusterConfigSnapshot[] = [];
    try {
      await config.start();
      await status.start();
      config.onChange((s) => changes.push(s));

      const fileConfig = (batch: string): Record<string, string> => ({
        'connector.class': FILE_SOURCE,
        'tasks.max': '1',
        file: input,
        topic: dataTopic,
        'batch.size': batch,
      });
      // Names with '-': task keys are parsed from the last '-'.
      const a = 'file-src-a';
      const b = 'other-b-2';
      await ok(connect, 'POST', '/connectors', { name: a, config: fileConfig('100') });
      await ok(connect, 'POST', '/connectors', { name: b, config: fileConfig('50') });
      await statusWhen(connect, a, running);
      await statusWhen(connect, b, running);
      let snap = await snapshotWhen(config, (s) => s.taskConfigs.get(a)?.length === 1 && s.taskConfigs.get(b)?.length === 1);
      expect(snap.targetStates.get(a)).toBe('RUNNING');

      await ok(connect, 'PUT', `/connectors/${a}/pause`);
      await statusWhen(connect, a, (s) => s.connector.state === 'PAUSED');
      snap = await snapshotWhen(config, (s) => s.targetStates.get(a) === 'PAUSED');
      expect(snap.targetStates.get(a)).toBe('PAUSED');

      await ok(connect, 'PUT', `/connectors/${a}/stop`);
      await statusWhen(connect, a, (s) => s.connector.state === 'STOPPED');
      snap = await snapshotWhen(config, (s) => s.targetStates.get(a) === 'STOPPED');
      // STOPPED comes from state.v2 (state says PAUSED for older readers); a stop commits zero tasks.
      expect(snap.targetStates.get(a)).toBe('STOPPED');
      expect(snap.taskConfigs.get(a)).toEqual([]);

      await ok(connect, 'PUT', `/connectors/${a}/resume`);
      await statusWhen(connect, a, running);
      const restartsBefore = config.snapshot().restartRequests.length;
      await ok(connect, 'POST', `/connectors/${a}/restart?includeTasks=true&onlyFailed=false`);
      await statusWhen(connect, a, running);
      snap = await snapshotWhen(config, (s) => s.restartRequests.length > restartsBefore);
      expect(snap.restartRequests.slice(restartsBefore)).toEqual([
        expect.objectContaining({ connector: a, includeTasks: true, onlyFailed: false }),
      ]);

      // KIP-976: a cluster-wide logger level, as Connect writes it.
      const logged = await rest(connect, 'PUT', '/admin/loggers/org.apache.kafka.connect.file?scope=cluster', { level: 'DEBUG' });
      expect(logged.status).toBe(204);
      snap = await snapshotWhen(config, (s) => s.loggerLevels.length > 0);
      expect(snap.loggerLevels).toEqual([
        expect.objectContaining({ namespace: 'org.apache.kafka.connect.file', level: 'DEBUG' }),
      ]);

      await ok(connect, 'PUT', `/connectors/${a}/config`, fileConfig('7'));
      await statusWhen(connect, a, running);
      await ok(connect, 'DELETE', `/connectors/${b}`);
      await statusWhen(connect, a, running);
      const deadline = Date.now() + 15_000;
      while ((await rest(connect, 'GET', `/connectors/${b}/status`)).status !== 404 && Date.now() < deadline) await sleep(200);

      // What Connect's REST says now...
      const names = (await ok(connect, 'GET', '/connectors')) as string[];
      const restConfig = await ok(connect, 'GET', `/connectors/${a}/config`);
      const restTasks = (await ok(connect, 'GET', `/connectors/${a}/tasks`)) as Array<{ config: Record<string, string> }>;
      const restStatus = await statusWhen(connect, a, running);
      expect(names).toEqual([a]);
      expect(restTasks[0]?.config['batch.size']).toBe('7');

      // ...is what the stores read from the topics.
      snap = await snapshotWhen(config, (s) => !s.connectors.has(b) && s.taskConfigs.get(a)?.[0]?.['batch.size'] === '7');
      expect([...snap.connectors.keys()]).toEqual([a]);
      expect(snap.connectors.get(a)).toEqual(restConfig);
      expect(snap.targetStates.get(a)).toBe('RUNNING');
      expect(snap.taskConfigs.get(a)).toEqual(restTasks.map((t) => t.config));
      expect(snap.taskConfigs.has(b)).toBe(false);
      expect(snap.inconsistent.size).toBe(0);
      expect(changes.length).toBeGreaterThan(0);
      expect(changes.at(-1)?.offset).toBeLessThanOrEqual(snap.offset);

      const fresh = new KafkaStatusTopicStore({ kafka, topic: topics.status, logger: statusLog });
      try {
        await fresh.start();
        for (const store of [status, fresh]) {
          await store.readToEnd();
          const connector = store.connector(a);
          expect(connector?.state).toBe(restStatus.connector.state);
          expect(connector?.workerId).toBe(restStatus.connector.worker_id);
          if (restStatus.connector.version !== undefined) expect(connector?.version).toBe(restStatus.connector.version);
          expect([...store.tasks(a).entries()].map(([id, t]) => ({ id, state: t.state, worker_id: t.workerId }))).toEqual(
            restStatus.tasks.map((t) => ({ id: t.id, state: t.state, worker_id: t.worker_id })),
          );
          expect(store.connector(b)).toBeUndefined();
          expect(store.tasks(b).size).toBe(0);
        }
      } finally {
        await fresh.stop();
      }
      // Every record Connect wrote was understood (session keys are skipped without a warning).
      expect(configLog.warnings).toEqual([]);
      expect(statusLog.warnings).toEqual([]);
    } finally {
      await Promise.allSettled([config.stop(), status.stop()]);
      await connect.stop();
    }
  }, 90_000);

  it('writes what Kafka Connect reads: a connector config, target states and task configs show in its REST answers', async () => {
    if (setup === undefined) {
      console.warn(`Kafka Connect unavailable, comparison not run: ${unavailable}`);
      return;
    }
    const topics = { config: uniqueTopic('cfg'), status: uniqueTopic('status'), offsets: uniqueTopic('offsets') };
    const input = join(dir, 'input-2.txt');
    await writeFile(input, 'x\n');
    const kafka = testKafka();
    const config = new KafkaConfigTopicStore({ kafka, topic: topics.config });
    const stopped = 'written-stopped-1';
    const paused = 'written-paused';
    const base = { 'connector.class': FILE_SOURCE, 'tasks.max': '1', file: input, topic: uniqueTopic('data') };
    const stoppedConfig = { ...base, name: stopped, 'batch.size': '11' };
    const pausedConfig = { ...base, name: paused, 'batch.size': '12' };
    const taskConfig = {
      'task.class': 'org.apache.kafka.connect.file.FileStreamSourceTask',
      file: input,
      topic: base.topic,
      'batch.size': '11',
      marker: 'from-tributary',
    };
    await config.start();
    try {
      await config.putTargetState(stopped, 'STOPPED');
      await config.putConnectorConfig(stopped, stoppedConfig);
      await config.putTaskConfigs(stopped, [taskConfig]);
      await config.putTargetState(paused, 'PAUSED');
      await config.putConnectorConfig(paused, pausedConfig);
      const snap = await config.readToEnd();
      expect(snap.targetStates.get(stopped)).toBe('STOPPED');
      expect(snap.taskConfigs.get(stopped)).toEqual([taskConfig]);
    } finally {
      await config.stop();
    }

    const connect = await startConnect('connect-b', topics);
    try {
      expect(((await ok(connect, 'GET', '/connectors')) as string[]).sort()).toEqual([paused, stopped].sort());
      expect(await ok(connect, 'GET', `/connectors/${stopped}/config`)).toEqual(stoppedConfig);
      expect(await ok(connect, 'GET', `/connectors/${paused}/config`)).toEqual(pausedConfig);
      // The task configs the store committed are the ones Connect serves (a stopped connector is not reconfigured).
      expect(await ok(connect, 'GET', `/connectors/${stopped}/tasks`)).toEqual([
        { id: { connector: stopped, task: 0 }, config: taskConfig },
      ]);
      await statusWhen(connect, stopped, (s) => s.connector.state === 'STOPPED');
      await statusWhen(connect, paused, (s) => s.connector.state === 'PAUSED');

      // KIP-976: a cluster-wide logger level written by Tributary is set by the running Connect worker.
      const namespace = 'org.apache.kafka.connect.file';
      const levelNow = async () => {
        const r = await rest(connect, 'GET', `/admin/loggers/${namespace}`);
        return r.status === 200 ? (r.json as { level: string }).level : `status ${r.status}`;
      };
      // Not a logger of its own yet (404), or the root's level.
      let level = await levelNow();
      expect(level).not.toBe('TRACE');
      const writer = new KafkaConfigTopicStore({ kafka, topic: topics.config });
      await writer.start();
      try {
        await writer.putLoggerLevel(namespace, 'TRACE');
      } finally {
        await writer.stop();
      }
      const deadline = Date.now() + 15_000;
      while (level !== 'TRACE' && Date.now() < deadline) {
        await sleep(200);
        level = await levelNow();
      }
      expect(level).toBe('TRACE');
    } finally {
      await connect.stop();
    }
  }, 90_000);

  it('refuses a config topic with more than one partition or not compacted, and a status topic not compacted', async () => {
    const kafka = testKafka();
    const admin = new TopicAdmin(kafka);
    const twoPartitions = uniqueTopic('cfg-two');
    const deleting = uniqueTopic('cfg-delete');
    const statusDeleting = uniqueTopic('status-delete');
    try {
      await admin.ensureTopics([twoPartitions], { partitions: 2, configs: { 'cleanup.policy': 'compact' } });
      await admin.ensureTopics([deleting, statusDeleting], { partitions: 1, configs: { 'cleanup.policy': 'delete' } });
      const refusal = async (start: () => Promise<unknown>): Promise<string> => {
        const e = await start().then(
          () => undefined,
          (err: unknown) => err,
        );
        expect(isTributaryError(e) && e.code === 'CONFIG_INVALID', String(e)).toBe(true);
        return (e as Error).message;
      };
      const m1 = await refusal(() => new KafkaConfigTopicStore({ kafka, topic: twoPartitions }).start());
      expect(m1).toContain(`'${twoPartitions}'`);
      expect(m1).toContain('has 2 partitions');
      expect(m1).toContain('exactly 1');
      const m2 = await refusal(() => new KafkaConfigTopicStore({ kafka, topic: deleting }).start());
      expect(m2).toContain('cleanup.policy=delete');
      expect(m2).toContain('config.storage.topic');
      const m3 = await refusal(() => new KafkaStatusTopicStore({ kafka, topic: statusDeleting }).start());
      expect(m3).toContain('status.storage.topic');
      // A missing status topic is created compacted with status.storage.partitions.
      const created = uniqueTopic('status-new');
      const store = new KafkaStatusTopicStore({ kafka, topic: created, partitions: 3 });
      await store.start();
      await store.stop();
      expect(await admin.partitionCount(created)).toBe(3);
      expect(await admin.topicConfig(created, 'cleanup.policy')).toBe('compact');
    } finally {
      await admin.close();
    }
  });
});
