import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { runStandalone, type StandaloneWorker } from '../../src/cli/standalone.js';
import { consumeAll, createTopics, describeKafka, requireKafkaBootstrap, uniqueTopic } from '../helpers/kafka.js';
import { parsePrometheus, type Sample, sampleValue } from '../helpers/prometheus-text.js';
import { propertiesText, quiet } from '../helpers/worker-files.js';

const fileSource = new URL('../../examples/file-source/src/index.ts', import.meta.url).pathname;
const lines = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `line ${from + i}`);

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'metrics-int-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  return parsePrometheus(await res.text());
}

/** Scrapes until `ok` holds; fails with the last scrape's figures after `timeoutMs`. */
async function scrapeUntil(url: string, ok: (s: Sample[]) => boolean, what: string, timeoutMs = 30_000): Promise<Sample[]> {
  const deadline = Date.now() + timeoutMs;
  let last: Sample[] = [];
  while (Date.now() < deadline) {
    last = await scrape(url);
    if (ok(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  const shown = last.filter((s) => s.name.startsWith('kafka_connect_source_task') || s.name.startsWith('tributary_uncommitted'));
  throw new Error(`${what} did not hold within ${timeoutMs} ms; last scrape: ${JSON.stringify(shown)}`);
}

describeKafka('GET /metrics while the file source runs on a real broker', () => {
  it('counts exactly the records in the topic, commits them all, shows the worker, task status and source lag, and answers health and loggers', async () => {
    const bootstrap = requireKafkaBootstrap();
    const topic = uniqueTopic('metrics-lines');
    await createTopics([topic], 1);
    const file = join(dir, 'app.log');
    await writeFile(file, `${lines(0, 120).join('\n')}\n`);
    await writeFile(
      join(dir, 'worker.properties'),
      propertiesText({
        listeners: 'http://127.0.0.1:0',
        'bootstrap.servers': bootstrap,
        'offset.storage.file.filename': join(dir, 'offsets.json'),
        'offset.flush.interval.ms': '300',
        'log.level': 'info',
      }),
    );
    await writeFile(
      join(dir, 'files.properties'),
      propertiesText({
        name: 'files',
        'connector.class': `${fileSource}#FileSourceConnector`,
        file,
        topic,
        'value.converter': 'string',
        'poll.interval.ms': '100',
      }),
    );
    let worker: StandaloneWorker | undefined;
    try {
      worker = await runStandalone({
        workerConfigPath: join(dir, 'worker.properties'),
        connectorConfigPaths: [join(dir, 'files.properties')],
        logger: quiet,
      });
      const url = `${worker.rest?.url}/metrics`;
      const task = { connector: 'files', task: '0' };
      const written = (s: Sample[]) => sampleValue(s, 'kafka_connect_source_task_source_record_write_total', task);
      const committedAll = (n: number) => (s: Sample[]) =>
        written(s) === n &&
        sampleValue(s, 'tributary_uncommitted_records', task) === 0 &&
        sampleValue(s, 'tributary_source_lag_position', { ...task, unit: 'bytes' }) === 0;

      const inTopic = await consumeAll(topic, 120);
      let s = await scrapeUntil(url, committedAll(120), '120 records written and committed');
      expect(inTopic.map((r) => String(r.value))).toEqual(lines(0, 120));
      expect(sampleValue(s, 'kafka_connect_source_task_source_record_poll_total', task)).toBe(inTopic.length);
      expect(written(s)).toBe(inTopic.length);
      expect(sampleValue(s, 'kafka_connect_source_task_source_record_active_count', task)).toBe(0);
      expect(sampleValue(s, 'kafka_connect_connector_task_status', { ...task, status: 'running' })).toBe(1);
      expect(sampleValue(s, 'kafka_connect_connector_status', { connector: 'files', status: 'running' })).toBe(1);
      expect(sampleValue(s, 'kafka_connect_worker_connector_count')).toBe(1);
      expect(sampleValue(s, 'kafka_connect_worker_task_count')).toBe(1);
      expect(sampleValue(s, 'kafka_connect_worker_connector_running_task_count', { connector: 'files' })).toBe(1);
      expect(sampleValue(s, 'kafka_connect_connector_task_offset_commit_success_percentage', task)).toBe(100);
      expect(sampleValue(s, 'tributary_offset_flush_failures_total', task)).toBe(0);
      expect(
        sampleValue(s, 'tributary_source_partition_offset_age_seconds', {
          ...task,
          source_partition: JSON.stringify({ filename: file }),
        }),
      ).toBeGreaterThanOrEqual(0);
      expect(sampleValue(s, 'kafka_connect_task_error_total_record_errors', task)).toBe(0);
      const status = (await (await fetch(`${worker.rest?.url}/connectors/files/status`)).json()) as { tasks: unknown[] };
      expect(status.tasks[0]).toEqual({
        id: 0,
        state: 'RUNNING',
        worker_id: worker.workerId,
        version: '0.1.0',
        source_lag: { position: 0, unit: 'bytes' },
      });

      // The file grows: the lag shows the unread bytes until the task reads them, then the counters follow the topic.
      await appendFile(file, `${lines(120, 150).join('\n')}\n`);
      s = await scrapeUntil(url, committedAll(150), '150 records written and committed');
      const after = await consumeAll(topic, 150);
      expect(after).toHaveLength(150);
      expect(sampleValue(s, 'kafka_connect_source_task_source_record_poll_total', task)).toBe(after.length);
      expect(written(s)).toBe(after.length);
      expect(sampleValue(s, 'tributary_uncommitted_bytes', task)).toBe(0);

      // The same running worker answers its health check and changes a logger's level.
      const base = worker.rest?.url;
      const health = await fetch(`${base}/health`);
      expect([health.status, ((await health.json()) as { status: string }).status]).toEqual([200, 'healthy']);
      const put = await fetch(`${base}/admin/loggers/tributary.connector.files`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ level: 'DEBUG' }),
      });
      expect([put.status, await put.json()]).toEqual([200, ['tributary.connector.files', 'tributary.connector.files.task.0']]);
      expect(worker.loggerLevels.level('tributary.connector.files.task.0')).toBe('DEBUG');
      expect(((await (await fetch(`${base}/admin/loggers/root`)).json()) as { level: string }).level).toBe('INFO');
    } finally {
      await worker?.stop();
    }
  });
});
