import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type WatchedProcess, waitFor, watchProcess } from '../helpers/child-output.js';
import { silentServer } from '../helpers/silent-server.js';

const root = new URL('../..', import.meta.url).pathname;
const tsx = join(root, 'node_modules/tsx/dist/loader.mjs');

/** A datagen connector config for a CLI run in any folder (`connector.class` is an absolute path). */
function datagenProperties(maxRecords = 25): string {
  return [
    'name=gen',
    `connector.class=${join(root, 'examples/datagen/src/index.ts')}#DatagenConnector`,
    'topic=events',
    'rate=0',
    `max.records=${maxRecords}`,
  ].join('\n');
}

/** Children still running after a test (one that failed midway) are killed. */
const children = new Set<ChildProcess>();
afterEach(() => {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
});

function startCli(args: string[], cwd = root): WatchedProcess {
  const child = spawn(process.execPath, ['--import', tsx, join(root, 'src/cli/main.ts'), ...args], {
    cwd,
    // tsx reads the tsconfig of the folder it runs in; the project's maps 'tributary-connect' to src/.
    env: { ...process.env, TSX_TSCONFIG_PATH: join(root, 'tsconfig.json') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return watchProcess(child);
}

/** The JSON log lines of a run's stderr. */
function logEvents(stderr: string): Array<Record<string, unknown>> {
  return stderr.split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return [];
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}

describe('tributary standalone on the embedded default', () => {
  it('prints data and heartbeat records, stops on SIGTERM with a final flush, and resumes from it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cli-'));
    const offsets = join(dir, 'offsets.json');
    await writeFile(
      join(dir, 'worker.properties'),
      `listeners=\noffset.storage.file.filename=${offsets}\noffset.flush.interval.ms=600000\n`,
    );
    await writeFile(
      join(dir, 'gen.properties'),
      [
        'name=gen',
        'connector.class=./examples/datagen/src/index.ts#DatagenConnector',
        'topic=events',
        'rate=0',
        'max.records=25',
        'heartbeat.interval.ms=200',
        'heartbeat.topic=beats',
      ].join('\n'),
    );
    const args = ['standalone', join(dir, 'worker.properties'), join(dir, 'gen.properties')];
    const first = startCli(args);
    await waitFor(() => first.stdout().includes('"topic":"beats"'), 20_000);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const lines = first
      .stdout()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.filter((l) => l.topic === 'events').map((l) => l.value.seq)).toEqual(
      Array.from({ length: 25 }, (_, i) => i + 1),
    );
    expect(lines.some((l) => l.topic === 'beats' && l.heartbeat === true)).toBe(true);
    // The flush interval is 10 minutes: only the final flush on SIGTERM can have written this.
    const stored = JSON.parse(await readFile(offsets, 'utf8'));
    expect(stored.connectors.gen).toEqual([{ partition: { sequence: 0, task: 0 }, offset: { seq: 25 } }]);
    expect(first.stderr()).toContain('"event":"task.stopped"');

    // max.records counts from the committed offsets: raising it to 40 writes 26..40.
    await writeFile(
      join(dir, 'gen2.properties'),
      (await readFile(join(dir, 'gen.properties'), 'utf8')).replace('max.records=25', 'max.records=40'),
    );
    const second = startCli(['standalone', join(dir, 'worker.properties'), join(dir, 'gen2.properties')]);
    await waitFor(() => second.stderr().includes('"event":"task.started"'), 20_000);
    await new Promise((r) => setTimeout(r, 500));
    second.child.kill('SIGINT');
    expect(await second.exited).toBe(0);
    const again = second
      .stdout()
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(again.filter((l) => l.topic === 'events').map((l) => l.value.seq)).toEqual(
      Array.from({ length: 15 }, (_, i) => i + 26),
    );
  }, 60_000);

  it('exits 1 with a clear message on a bad connector config', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cli-'));
    await writeFile(join(dir, 'w.properties'), `listeners=\noffset.storage.file.filename=${join(dir, 'o.json')}\n`);
    await writeFile(join(dir, 'c.properties'), 'name=c\nconnector.class=./examples/datagen/src/index.ts\nrate=fast\n');
    const run = startCli(['standalone', join(dir, 'w.properties'), join(dir, 'c.properties')]);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain(`CONFIG_INVALID: Invalid connector config ${join(dir, 'c.properties')} (connector 'c')`);
    expect(run.stderr()).toContain('Missing required configuration "topic"');
    expect(run.stderr()).toContain('rate: expected integer >= 0, got "fast"');
  }, 30_000);

  it('keeps the other connectors running when one writes to a topic Kafka refuses, failing only its task with RECORD_INVALID', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cli-'));
    const out = join(dir, 'out');
    const offsets = join(dir, 'offsets.json');
    await writeFile(
      join(dir, 'worker.properties'),
      `listeners=http://127.0.0.1:0\nembedded.output=${out}\noffset.storage.file.filename=${offsets}\noffset.flush.interval.ms=600000\n`,
    );
    await writeFile(
      join(dir, 'good.properties'),
      ['name=good', 'connector.class=./examples/datagen/src/index.ts#DatagenConnector', 'topic=events', 'rate=200'].join('\n'),
    );
    // Too long for a file name, and for Kafka (at most 249 characters). The connector's name
    // stays short: a name longer than MAX_CONNECTOR_NAME_LENGTH is refused at create.
    const longTopic = `t-${'n'.repeat(2100)}`;
    await writeFile(
      join(dir, 'bad.properties'),
      ['name=bad', 'connector.class=./examples/datagen/src/index.ts#DatagenConnector', `topic=${longTopic}`, 'rate=200'].join(
        '\n',
      ),
    );
    const run = startCli([
      'standalone',
      join(dir, 'worker.properties'),
      join(dir, 'good.properties'),
      join(dir, 'bad.properties'),
    ]);
    const events = () => readFile(join(out, 'events.jsonl'), 'utf8').catch(() => '');
    const url = () => logEvents(run.stderr()).find((e) => e.event === 'rest.listening')?.url;
    type Status = { name: string; tasks: Array<{ state: string; trace?: string }> };
    const statuses = async (): Promise<Record<string, { status: Status }>> =>
      (await fetch(`${url()}/connectors?expand=status`)).json() as Promise<Record<string, { status: Status }>>;
    let exited: number | null | undefined;
    void run.exited.then((code) => (exited = code));
    await waitFor(() => logEvents(run.stderr()).some((e) => e.event === 'task.failed') || exited !== undefined, 30_000);
    expect(exited, run.stderr()).toBeUndefined();
    const bad = (await statuses()).bad?.status;
    expect(bad?.tasks[0]?.state).toBe('FAILED');
    const failed = logEvents(run.stderr()).find((e) => e.event === 'task.failed');
    expect(failed?.connector).toBe('bad');
    expect((failed?.err as { code?: string } | undefined)?.code).toBe('RECORD_INVALID');
    expect(bad?.tasks[0]?.trace).toContain("is 2102 characters long, more than Kafka's 249");
    // The other connector goes on writing after the bad one failed.
    const before = (await events()).split('\n').filter(Boolean).length;
    const moreLines = async () => (await events()).split('\n').filter(Boolean).length > before;
    const deadline = Date.now() + 10_000;
    while (!(await moreLines()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await moreLines()).toBe(true);
    expect((await statuses()).good?.status.tasks[0]?.state).toBe('RUNNING');
    expect(exited).toBeUndefined();
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    const stored = JSON.parse(await readFile(offsets, 'utf8'));
    expect(stored.connectors.good?.[0]?.offset.seq).toBeGreaterThan(0);
  }, 60_000);

  it('stops gracefully on SIGTERM during start-up, with the first connectors already streaming', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cli-'));
    const offsets = join(dir, 'offsets.json');
    await writeFile(
      join(dir, 'worker.properties'),
      `listeners=http://127.0.0.1:0\noffset.storage.file.filename=${offsets}\noffset.flush.interval.ms=600000\n`,
    );
    await writeFile(
      join(dir, 'gen.properties'),
      ['name=gen', 'connector.class=./examples/datagen/src/index.ts#DatagenConnector', 'topic=events', 'rate=100'].join('\n'),
    );
    // Its task takes 5 s to start: the worker is still starting while gen streams.
    await writeFile(
      join(dir, 'slow.properties'),
      [
        'name=slow',
        'connector.class=./test/helpers/slow-start-connector.ts#SlowStartConnector',
        'topic=slow',
        'start.delay.ms=5000',
      ].join('\n'),
    );
    const run = startCli([
      'standalone',
      join(dir, 'worker.properties'),
      join(dir, 'gen.properties'),
      join(dir, 'slow.properties'),
    ]);
    const started = (connector: string) =>
      logEvents(run.stderr()).some((e) => e.event === 'task.started' && e.connector === connector);
    await waitFor(
      () => run.stdout().includes('"topic":"events"') && logEvents(run.stderr()).some((e) => e.event === 'rest.listening'),
      30_000,
    );
    expect(started('gen')).toBe(true);
    expect(started('slow')).toBe(false);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    expect(logEvents(run.stderr()).map((e) => e.event)).toContain('worker.startup.aborted');
    // The flush interval is 10 minutes: only the final flush of a graceful stop can have written this.
    const lines = run
      .stdout()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const last = lines.filter((l) => l.topic === 'events').at(-1)?.value.seq;
    const stored = JSON.parse(await readFile(offsets, 'utf8'));
    expect(stored.connectors.gen).toEqual([{ partition: { sequence: 0, task: 0 }, offset: { seq: last } }]);
  }, 60_000);

  it('takes a SIGTERM repeated at once (several processes forwarding one) as one stop; a later one exits 130 at once', async () => {
    // The slow task takes 4 s to start: a stop during start-up waits for it, so both signals
    // come while the worker stops.
    const setUp = async () => {
      const dir = await mkdtemp(join(tmpdir(), 'tributary-cli-'));
      await writeFile(
        join(dir, 'worker.properties'),
        `listeners=http://127.0.0.1:0\noffset.storage.file.filename=${join(dir, 'offsets.json')}\n`,
      );
      await writeFile(
        join(dir, 'slow.properties'),
        [
          'name=slow',
          'connector.class=./test/helpers/slow-start-connector.ts#SlowStartConnector',
          'topic=slow',
          'start.delay.ms=4000',
        ].join('\n'),
      );
      const run = startCli(['standalone', join(dir, 'worker.properties'), join(dir, 'slow.properties')]);
      await waitFor(() => logEvents(run.stderr()).some((e) => e.event === 'rest.listening'), 30_000);
      return run;
    };
    /** Two SIGTERMs `gapMs` apart while the worker starts: its exit code and stderr. */
    const twoSignals = async (gapMs: number) => {
      const run = await setUp();
      run.child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, gapMs));
      run.child.kill('SIGTERM');
      return { code: await run.exited, stderr: run.stderr() };
    };
    const twice = await twoSignals(100);
    expect(twice.code).toBe(0);
    expect(twice.stderr).toContain('SIGTERM again within 1000 ms, taken as the same stop');
    expect(logEvents(twice.stderr).map((e) => e.event)).toContain('worker.stopped');

    const impatient = await twoSignals(1500);
    expect(impatient.code).toBe(130);
    expect(impatient.stderr).toContain('tributary: SIGTERM again, exiting without waiting');
    expect(logEvents(impatient.stderr).map((e) => e.event)).not.toContain('worker.stopped');
  }, 60_000);

  it('reports a start-up failure that comes after a SIGTERM: exit 1 and the error, not a quiet exit 0', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cli-'));
    await writeFile(join(dir, 'worker.properties'), `listeners=\noffset.storage.file.filename=${join(dir, 'offsets.json')}\n`);
    // With initial offsets a create is all or nothing: a connector whose start() fails is refused.
    await writeFile(
      join(dir, 'failing.json'),
      JSON.stringify({
        name: 'failing',
        config: {
          'connector.class': './test/helpers/failing-start-connector.ts#FailingStartConnector',
          topic: 'x',
          'start.delay.ms': '2000',
        },
        offsets: [{ partition: { source: 'slow' }, offset: { i: 1 } }],
      }),
    );
    const run = startCli(['standalone', join(dir, 'worker.properties'), join(dir, 'failing.json')]);
    await waitFor(() => logEvents(run.stderr()).some((e) => e.event === 'worker.started'), 30_000, 'the worker to start');
    // The connector is being created (its start() takes 2 s, then fails) when the signal comes.
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain("CONNECTOR_FAILED: Connector 'failing' failed to start");
    expect(logEvents(run.stderr()).map((e) => e.event)).not.toContain('worker.startup.aborted');
  }, 60_000);

  it('stops at once on SIGTERM while the connection check waits for a Kafka that does not answer', async () => {
    // A port that accepts connections and never answers: kafkajs waits for its timeouts.
    const silent = await silentServer();
    try {
      const port = silent.port;
      const dir = await mkdtemp(join(tmpdir(), 'tributary-cli-'));
      await writeFile(join(dir, 'worker.properties'), `bootstrap.servers=127.0.0.1:${port}\nlisteners=\n`);
      const run = startCli(['standalone', join(dir, 'worker.properties')]);
      // The worker's connection check has connected and waits for an answer.
      await waitFor(silent.connected, 30_000, 'the connection check to connect');
      const sent = Date.now();
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
      expect(Date.now() - sent).toBeLessThan(3000);
      expect(logEvents(run.stderr()).map((e) => e.event)).toContain('worker.startup.aborted');
    } finally {
      silent.close();
    }
  }, 60_000);

  it("logs an error that escapes one connector's code and keeps the worker and the other connectors running", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cli-'));
    const offsets = join(dir, 'offsets.json');
    await writeFile(join(dir, 'worker.properties'), `listeners=\noffset.storage.file.filename=${offsets}\n`);
    await writeFile(
      join(dir, 'gen.properties'),
      ['name=gen', 'connector.class=./examples/datagen/src/index.ts#DatagenConnector', 'topic=events', 'rate=100'].join('\n'),
    );
    await writeFile(
      join(dir, 'buggy.properties'),
      ['name=buggy', 'connector.class=./test/helpers/escaping-connector.ts#EscapingConnector', 'topic=x'].join('\n'),
    );
    const run = startCli([
      'standalone',
      join(dir, 'worker.properties'),
      join(dir, 'gen.properties'),
      join(dir, 'buggy.properties'),
    ]);
    let exited: number | null | undefined;
    void run.exited.then((code) => (exited = code));
    const logged = (event: string) => logEvents(run.stderr()).find((e) => e.event === event);
    await waitFor(
      () =>
        (logged('process.uncaughtException') !== undefined && logged('process.unhandledRejection') !== undefined) ||
        exited !== undefined,
      30_000,
    );
    expect(exited, run.stderr()).toBeUndefined();
    expect(logged('process.uncaughtException')?.level).toBe(50);
    expect(String(logged('process.uncaughtException')?.msg)).toContain('thrown from a timer of the escaping task');
    expect(String(logged('process.unhandledRejection')?.msg)).toContain('rejected with no handler by the escaping task');
    const count = () =>
      run
        .stdout()
        .split('\n')
        .filter((l) => l.includes('"topic":"events"')).length;
    const before = count();
    await waitFor(() => count() > before, 10_000);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
  }, 60_000);

  it('refuses an offsets file it cannot write at start: exit 1, a clear error, no record sent', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cli-'));
    await writeFile(join(dir, 'w.properties'), 'listeners=\noffset.storage.file.filename=/proc/x.json\n');
    await writeFile(join(dir, 'c.properties'), datagenProperties());
    const run = startCli(['standalone', join(dir, 'w.properties'), join(dir, 'c.properties')], dir);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain('tributary: OFFSET_STORE_UNWRITABLE: Offsets file /proc/x.json cannot be written');
    expect(run.stdout()).toBe('');
  }, 30_000);

  it('refuses a second worker on the default offsets file of one folder, naming the file and the pid holding it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cli-'));
    // No offset.storage.file.filename: both use .tributary/offsets.json of the folder they run in.
    await writeFile(join(dir, 'w.properties'), 'listeners=\n');
    await writeFile(join(dir, 'c.properties'), datagenProperties(0));
    const args = ['standalone', join(dir, 'w.properties'), join(dir, 'c.properties')];
    const first = startCli(args, dir);
    try {
      await waitFor(() => first.stderr().includes('"event":"task.started"'), 20_000);
      const second = startCli(args, dir);
      expect(await second.exited).toBe(1);
      const file = join(dir, '.tributary', 'offsets.json');
      expect(second.stderr()).toContain(
        `tributary: OFFSET_STORE_LOCKED: Offsets file ${file} is in use by process ${first.child.pid} on `,
      );
      expect(second.stdout()).toBe('');
    } finally {
      first.child.kill('SIGTERM');
    }
    expect(await first.exited).toBe(0);
    // The first released its lock on the way out; a killed one leaves a stale lock the next run takes over.
    expect(await readdir(join(dir, '.tributary'))).toEqual(['offsets.json']);
    const killed = startCli(args, dir);
    await waitFor(() => killed.stderr().includes('"event":"task.started"'), 20_000);
    killed.child.kill('SIGKILL');
    await killed.exited;
    expect((await readdir(join(dir, '.tributary'))).sort()).toEqual(['offsets.json', 'offsets.json.lock']);
    const after = startCli(args, dir);
    await waitFor(() => after.stderr().includes('"event":"task.started"'), 20_000);
    after.child.kill('SIGTERM');
    expect(await after.exited).toBe(0);
  }, 90_000);

  it('stops gracefully, releasing its lock, on a SIGTERM that comes while it starts', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cli-'));
    await writeFile(join(dir, 'w.properties'), 'listeners=\n');
    // A connector whose start() takes a while, as one connecting to its source would.
    await writeFile(
      join(dir, 'slow.ts'),
      [
        `import { DatagenConnector } from ${JSON.stringify(join(root, 'examples/datagen/src/index.ts'))};`,
        'export class SlowConnector extends DatagenConnector {',
        '  override async start(...args: Parameters<DatagenConnector["start"]>): Promise<void> {',
        "    process.stderr.write('slow connector starting\\n');",
        '    await new Promise((r) => setTimeout(r, 3000));',
        '    return super.start(...args);',
        '  }',
        '}',
      ].join('\n'),
    );
    await writeFile(
      join(dir, 'c.properties'),
      datagenProperties(0).replace(/connector\.class=.*/, `connector.class=${join(dir, 'slow.ts')}#SlowConnector`),
    );
    const run = startCli(['standalone', join(dir, 'w.properties'), join(dir, 'c.properties')], dir);
    await waitFor(() => run.stderr().includes('slow connector starting'), 20_000);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    expect(run.stderr()).toContain('"event":"worker.stopped"');
    expect(await readdir(join(dir, '.tributary'))).toEqual(['offsets.json']);
  }, 30_000);

  it('exits non-zero with an ERROR when the final offset flush fails', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cli-'));
    const folder = join(dir, 'state');
    await mkdir(folder);
    await writeFile(
      join(dir, 'w.properties'),
      `listeners=\noffset.storage.file.filename=${join(folder, 'offsets.json')}\noffset.flush.interval.ms=600000\n`,
    );
    await writeFile(join(dir, 'c.properties'), datagenProperties());
    const run = startCli(['standalone', join(dir, 'w.properties'), join(dir, 'c.properties')], dir);
    await waitFor(() => run.stdout().trim().split('\n').length >= 25, 20_000);
    // A file where the folder was: writes fail, as root too (chmod alone would not stop root).
    await rm(folder, { recursive: true });
    await writeFile(folder, 'not a folder');
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(1);
    const errors = run
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .filter((l) => l.event === 'offsets.flush.final.failed');
    expect(errors).toHaveLength(1);
    expect(errors[0].level).toBe(50); // pino's ERROR
    expect(errors[0].msg).toContain('Final offset flush of task gen-0 failed');
    expect(run.stderr()).toContain(
      'tributary: stop failed: OFFSET_FLUSH_FAILED: The final offset flush failed for task(s) gen-0',
    );
    expect(run.stderr()).not.toContain('retrying at the next flush');
  }, 60_000);
});
