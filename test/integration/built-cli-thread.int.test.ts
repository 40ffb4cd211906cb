/**
 * The CLI as `npm run build` makes it (tsup.config.ts): its kafkajs producer thread loads from
 * the script built beside dist/cli/main.js, and records reach Kafka through it. The other CLI
 * tests run the sources through tsx, where the thread finds its .ts script instead.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, type Options } from 'tsup';
import { expect, it } from 'vitest';
import { KAFKAJS_UNFIXED } from '../../src/kafka/kafkajs-fixes.js';
import tsupConfig from '../../tsup.config.js';
import { waitFor } from '../helpers/child-output.js';
import { consumeAll, createTopics, describeKafka, requireKafkaBootstrap, uniqueTopic } from '../helpers/kafka.js';

const root = new URL('../..', import.meta.url).pathname;

describeKafka('the built CLI (tsup.config.ts)', () => {
  it('writes through its kafkajs producer thread, loaded from beside dist/cli/main.js', async () => {
    // Inside the repository, so that the bundle finds its external packages in node_modules.
    await mkdir(join(root, 'test/.work'), { recursive: true });
    const out = await mkdtemp(join(root, 'test/.work/dist-'));
    const configs = (Array.isArray(tsupConfig) ? tsupConfig : [tsupConfig]) as Options[];
    const cli = configs.find((c) => typeof c.entry === 'object' && c.entry !== null && 'cli/main' in c.entry);
    expect(cli, 'tsup.config.ts builds cli/main').toBeDefined();
    await build({ ...cli, config: false, outDir: out, silent: true });
    // The connector as a package would ship it: plain JavaScript, loaded by path.
    await build({
      config: false,
      entry: { datagen: join(root, 'examples/datagen/src/index.ts') },
      outDir: out,
      format: ['esm'],
      platform: 'node',
      target: 'node20',
      silent: true,
    });
    const topic = uniqueTopic('built-cli');
    await createTopics([topic], 1);
    const dir = await mkdtemp(join(tmpdir(), 'tributary-dist-run-'));
    await writeFile(
      join(dir, 'worker.properties'),
      `bootstrap.servers=${requireKafkaBootstrap()}\nlisteners=\noffset.storage.file.filename=${join(dir, 'offsets.json')}\nsender.thread=true\n`,
    );
    await writeFile(
      join(dir, 'datagen.properties'),
      `name=built\nconnector.class=${join(out, 'datagen.js')}#DatagenConnector\ntopic=${topic}\nrate=0\nmax.records=3000\n`,
    );
    const child = spawn(process.execPath, [join(out, 'cli/main.js'), 'standalone', 'worker.properties', 'datagen.properties'], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, TRIBUTARY_LOG_FORMAT: 'json', TRIBUTARY_LOG_LEVEL: 'debug' },
    });
    let log = '';
    child.stdout.on('data', (d) => (log += d));
    child.stderr.on('data', (d) => (log += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const got = await consumeAll(topic, 3000, 60_000);
      expect(got).toHaveLength(3000);
      expect(log).toContain('"event":"producer.thread"');
      // The bundled thread loaded kafkajs with the seven fixes (src/kafka/kafkajs-fixes.ts).
      expect(log).toContain(
        'kafkajs fixes in force on the producer thread: groupMessagesPerPartition, encoder, framing, crc32C, record, produce-v3-request, filterAbortedMessages',
      );
      expect(log).not.toContain(KAFKAJS_UNFIXED);
    } finally {
      if (child.exitCode === null) child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    await rm(out, { recursive: true, force: true });
    await waitFor(() => log.includes('worker stopped'), 5_000, 'the worker to say it stopped');
    expect(log).not.toMatch(/producer thread (exited|failed)|kafkajs-producer-thread.js\) is missing/);
  }, 120_000);
});
