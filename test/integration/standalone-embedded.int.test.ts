import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

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
});
