/**
 * The `tributary` command where its start-up could hang: a folder the system will not create
 * (`/proc/...`, where Node 20's recursive mkdir never returns) and a connector whose start()
 * never resolves. Each must end the process promptly: with a clear error, or on SIGTERM.
 * Spawns the CLI from the source through tsx; no Kafka (the embedded sink).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type WatchedProcess, waitFor, watchProcess } from '../helpers/child-output.js';

const root = new URL('../..', import.meta.url).pathname;
let dir = '';
const started: WatchedProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tributary-cli-stuck-'));
  await writeFile(
    join(dir, 'gen.properties'),
    'name=gen\nconnector.class=./examples/datagen/src/index.ts#DatagenConnector\ntopic=events\nmax.records=1\n',
  );
});
afterAll(async () => {
  for (const p of started) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

async function startCli(worker: Record<string, string>, connectorFile: string): Promise<WatchedProcess> {
  const workerFile = join(dir, `w-${started.length}.properties`);
  const text = Object.entries({ listeners: '', ...worker })
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
  await writeFile(workerFile, text);
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'standalone', workerFile, connectorFile], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TRIBUTARY_LOG_FORMAT: 'json', TRIBUTARY_LOG_LEVEL: '' },
  });
  const watched = watchProcess(child);
  started.push(watched);
  return watched;
}

/** The exit code, or a failure when the process has not exited within `ms`. */
async function exitWithin(p: WatchedProcess, ms: number): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((r) => {
    timer = setTimeout(() => r('late'), ms);
  });
  const code = await Promise.race([p.exited, late]);
  clearTimeout(timer);
  if (code === 'late') {
    p.child.kill('SIGKILL');
    throw new Error(`still running ${ms} ms later; stderr:\n${p.stderr().slice(-2000)}`);
  }
  return code;
}

describe('tributary standalone with a folder that cannot be created', () => {
  it.each([
    ['a folder under /proc', '/proc/tributary-no-such/level/offsets.json', '/proc/tributary-no-such', 'ENOENT'],
    ['a folder under /proc/self', '/proc/self/tributary-no-such/level/offsets.json', '/proc/self/tributary-no-such', 'ENOENT'],
  ])(
    'offset.storage.file.filename in %s: exits 1 at once, naming the file, the level and the errno',
    async (_, file, level, code) => {
      const p = await startCli({ 'offset.storage.file.filename': file }, join(dir, 'gen.properties'));
      expect(await exitWithin(p, 25_000)).toBe(1);
      const err = p.stderr();
      expect(err).toContain('OFFSET_STORE_UNWRITABLE');
      expect(err).toContain(`Offsets file ${file} cannot be written`);
      expect(err).toContain(`its level ${level} could not be created`);
      expect(err).toContain(`(${code})`);
    },
    40_000,
  );

  it('embedded.output in a folder under /proc: exits 1 at once, naming the folder', async () => {
    const p = await startCli(
      { 'embedded.output': '/proc/tributary-no-such/out', 'offset.storage.file.filename': join(dir, 'o-embedded.json') },
      join(dir, 'gen.properties'),
    );
    expect(await exitWithin(p, 25_000)).toBe(1);
    expect(p.stderr()).toContain('folder /proc/tributary-no-such/out cannot be created');
    expect(p.stderr()).toContain('(ENOENT)');
  }, 40_000);
});

describe('tributary standalone stopped during a start-up that never ends', () => {
  it("SIGTERM while a connector's start() never resolves: the process exits 1 within the start-up stop bound, saying why", async () => {
    const connector = join(dir, 'never.properties');
    await writeFile(
      connector,
      `name=never\nconnector.class=${join(root, 'test/helpers/never-starting-connector.ts')}#NeverStartingConnector\ntopic=t\n`,
    );
    const p = await startCli({ 'offset.storage.file.filename': join(dir, 'o-never.json') }, connector);
    // The worker is up; the connector's start() is then under way and never ends.
    await waitFor(() => p.stderr().includes('"event":"worker.started"'), 30_000, 'the worker to start');
    await new Promise((r) => setTimeout(r, 500));
    expect(p.child.exitCode).toBe(null);
    const sent = performance.now();
    p.child.kill('SIGTERM');
    // 10 s is the CLI's bound; the rest is slack for a loaded machine.
    expect(await exitWithin(p, 20_000)).toBe(1);
    expect(performance.now() - sent).toBeGreaterThanOrEqual(9_000);
    expect(p.stderr()).toContain('SIGTERM during start-up, and the start-up has not ended 10000 ms later');
  }, 60_000);
});
