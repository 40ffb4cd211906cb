import { createHash } from 'node:crypto';
import { appendFile, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { runStandalone } from '../../../src/cli/standalone.js';
import { consumeAll, createTopics, describeKafka, requireKafkaBootstrap, uniqueTopic } from '../../../test/helpers/kafka.js';
import { propertiesText, quiet } from '../../../test/helpers/worker-files.js';

const connectorModule = new URL('../src/index.ts', import.meta.url).pathname;
const lines = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `line ${from + i} · ünïcode`);

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'file-source-kafka-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describeKafka('file source on a real broker through the standalone worker', () => {
  it('writes each line as a plain string, follows the file, and resumes after a restart with no gap and no repeat', async () => {
    const bootstrap = requireKafkaBootstrap();
    const topic = uniqueTopic('file-lines');
    await createTopics([topic], 1);
    const file = join(dir, 'app.log');
    const offsets = join(dir, 'offsets.json');
    await writeFile(file, `${lines(0, 50).join('\n')}\n`);
    await writeFile(
      join(dir, 'worker.properties'),
      propertiesText({
        listeners: '',
        'bootstrap.servers': bootstrap,
        'offset.storage.file.filename': offsets,
        'offset.flush.interval.ms': '500',
      }),
    );
    await writeFile(
      join(dir, 'files.properties'),
      propertiesText({
        name: 'file-source',
        'connector.class': `${connectorModule}#FileSourceConnector`,
        file,
        topic,
        'value.converter': 'string',
        'poll.interval.ms': '100',
      }),
    );
    const options = {
      workerConfigPath: join(dir, 'worker.properties'),
      connectorConfigPaths: [join(dir, 'files.properties')],
      logger: quiet,
    };

    const first = await runStandalone(options);
    try {
      expect((await consumeAll(topic, 50)).map((r) => String(r.value))).toEqual(lines(0, 50));
      await appendFile(file, `${lines(50, 70).join('\n')}\n`);
      expect((await consumeAll(topic, 70)).map((r) => String(r.value))).toEqual(lines(0, 70));
    } finally {
      await first.stop();
    }
    // The graceful stop flushed the position after the last line, and the fingerprint of the file's first KiB.
    const stored = JSON.parse(await readFile(offsets, 'utf8'));
    const head = (await readFile(file)).subarray(0, 1024);
    expect(stored.connectors['file-source']).toEqual([
      {
        partition: { filename: file },
        offset: {
          position: (await stat(file)).size,
          fingerprint: `${head.length}:${createHash('sha256').update(head).digest('hex')}`,
        },
      },
    ]);

    await appendFile(file, `${lines(70, 80).join('\n')}\n`);
    const second = await runStandalone(options);
    try {
      await consumeAll(topic, 80);
    } finally {
      await second.stop();
    }
    // Everything either worker wrote is in the topic now: exactly the 80 lines, in order, keys null.
    const all = await consumeAll(topic, 80);
    expect(all.map((r) => String(r.value))).toEqual(lines(0, 80));
    expect(all.every((r) => r.key === null)).toBe(true);
  });
});
