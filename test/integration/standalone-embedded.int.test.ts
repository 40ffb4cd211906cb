import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_CONNECTOR_NAME_LENGTH } from '../../src/runtime/worker.js';

const root = new URL('../..', import.meta.url).pathname;

function startCli(args: string[]): {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
} {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

async function waitFor(check: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
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
    expect(run.stderr()).toContain("CONFIG_INVALID: Invalid config of connector 'c'");
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
    // The longest name a connector may have (MAX_CONNECTOR_NAME_LENGTH): its topic is too long
    // for a file name, and for Kafka (at most 249 characters).
    const longName = 'n'.repeat(MAX_CONNECTOR_NAME_LENGTH);
    await writeFile(
      join(dir, 'bad.properties'),
      [
        `name=${longName}`,
        'connector.class=./examples/datagen/src/index.ts#DatagenConnector',
        `topic=t-${longName}`,
        'rate=200',
      ].join('\n'),
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
    const bad = (await statuses())[longName]?.status;
    expect(bad?.tasks[0]?.state).toBe('FAILED');
    const failed = logEvents(run.stderr()).find((e) => e.event === 'task.failed');
    expect(failed?.connector).toBe(longName);
    expect((failed?.err as { code?: string } | undefined)?.code).toBe('RECORD_INVALID');
    expect(bad?.tasks[0]?.trace).toContain(`is ${MAX_CONNECTOR_NAME_LENGTH + 2} characters long, more than Kafka's 249`);
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
});
