/**
 * The `tributary` command as a newcomer meets it: its help, an empty worker that takes
 * connectors over REST, and the errors of the first hour (typos, bad log settings, a file as
 * embedded.output, a Kafka that is not there). Spawns the CLI from the source through tsx.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type WatchedProcess, waitFor, watchProcess } from '../helpers/child-output.js';

const root = new URL('../..', import.meta.url).pathname;

function startCli(args: string[]): WatchedProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TRIBUTARY_LOG_FORMAT: '', TRIBUTARY_LOG_LEVEL: '' },
  });
  return watchProcess(child);
}

async function workdir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tributary-cli-'));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

/** A port nothing listens on: bound once, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

describe('tributary --help', () => {
  it('lists the commands, an example and where the docs are', async () => {
    const run = startCli(['--help']);
    expect(await run.exited).toBe(0);
    const help = run.stdout();
    expect(help).toContain('standalone <worker-config> [connector-configs...]');
    expect(help).toContain('Example:\n  tributary standalone worker.properties connector.properties');
    expect(help).toContain('Docs: README.md');
  }, 30_000);

  it('explains standalone: its arguments, the main settings, examples and the docs', async () => {
    const run = startCli(['standalone', '--help']);
    expect(await run.exited).toBe(0);
    const help = run.stdout();
    expect(help).toContain('none starts an');
    for (const key of [
      'bootstrap.servers',
      'embedded.output',
      'offset.flush.interval.ms',
      'listeners',
      'log.level',
      'log.format',
      'connector.class',
      'heartbeat.interval.ms',
    ]) {
      expect(help).toContain(key);
    }
    expect(help).toContain('Examples:');
    expect(help).toContain('npm run build');
    expect(help).toContain('Docs:');
  }, 30_000);
});

describe('tributary standalone', () => {
  it('starts an empty worker from a worker file alone, and takes a connector over REST', async () => {
    const dir = await workdir({});
    await writeFile(
      join(dir, 'w.properties'),
      // The connector comes over REST by module path, which needs the opt-in (loopback only).
      `listeners=http://127.0.0.1:0\nrest.plugin.module.paths.enable=true\noffset.storage.file.filename=${join(dir, 'o.json')}\n`,
    );
    const run = startCli(['standalone', join(dir, 'w.properties')]);
    try {
      await waitFor(() => run.stderr().includes('"event":"worker.empty"'), 30_000, 'the empty worker');
      const listening = run
        .stderr()
        .split('\n')
        .filter((l) => l.includes('"rest.listening"'))
        .map((l) => JSON.parse(l))[0];
      const url = listening.url as string;
      expect(await (await fetch(`${url}/connectors`)).json()).toEqual([]);
      const created = await fetch(`${url}/connectors`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'gen',
          config: { 'connector.class': './examples/datagen/src/index.ts#DatagenConnector', topic: 'events', 'max.records': '3' },
        }),
      });
      expect(created.status).toBe(201);
      await waitFor(() => run.stdout().includes('"topic":"events"'), 30_000, 'a record');
    } finally {
      run.child.kill('SIGTERM');
    }
    expect(await run.exited).toBe(0);
  }, 60_000);

  it('refuses a misspelled worker key, naming the file, the key and the key it probably meant', async () => {
    const dir = await workdir({ 'w.properties': 'bootstrap.server=127.0.0.1:9092\nlisteners=\n' });
    const run = startCli(['standalone', join(dir, 'w.properties')]);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain(
      `CONFIG_INVALID: Invalid worker config ${join(dir, 'w.properties')}: unknown key "bootstrap.server"; did you mean "bootstrap.servers"?`,
    );
    expect(run.stdout()).toBe('');
  }, 30_000);

  it('refuses heartbeat.interval.ms in the worker file, saying it belongs in the connector config', async () => {
    const dir = await workdir({ 'w.properties': 'heartbeat.interval.ms=500\nlisteners=\n' });
    const run = startCli(['standalone', join(dir, 'w.properties')]);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain('"heartbeat.interval.ms" is not a setting here; it belongs in the connector config');
  }, 30_000);

  it('refuses a misspelled connector key, naming the connector file', async () => {
    const dir = await workdir({
      'c.properties':
        'name=c\nconnector.class=./examples/datagen/src/index.ts#DatagenConnector\ntopic=t\nheartbeat.intervall.ms=500\n',
    });
    await writeFile(join(dir, 'w.properties'), `listeners=\noffset.storage.file.filename=${join(dir, 'o.json')}\n`);
    const run = startCli(['standalone', join(dir, 'w.properties'), join(dir, 'c.properties')]);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain(
      `Invalid connector config ${join(dir, 'c.properties')} (connector 'c'): unknown key "heartbeat.intervall.ms"; did you mean "heartbeat.interval.ms"?`,
    );
  }, 30_000);

  it('warns once about a key nothing reads, and runs', async () => {
    const dir = await workdir({
      'c.properties':
        'name=c\nconnector.class=./examples/datagen/src/index.ts#DatagenConnector\ntopic=t\nmax.records=1\nmy.note=x\n',
    });
    await writeFile(
      join(dir, 'w.properties'),
      `listeners=\noffset.storage.file.filename=${join(dir, 'o.json')}\nwho.wrote.this=me\n`,
    );
    const run = startCli(['standalone', join(dir, 'w.properties'), join(dir, 'c.properties')]);
    await waitFor(() => run.stdout().includes('"topic":"t"'), 30_000, 'a record');
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    const warnings = run
      .stderr()
      .split('\n')
      .filter((l) => l.includes('"level":40'))
      .map((l) => JSON.parse(l).msg);
    expect(warnings).toEqual([
      `worker config ${join(dir, 'w.properties')}: "who.wrote.this" was supplied but isn't a known config; it is ignored`,
      `connector 'c': "my.note" was supplied but isn't a known config; it is ignored`,
    ]);
  }, 30_000);

  it('refuses a bad log.level with the accepted values, not a stack', async () => {
    const dir = await workdir({ 'w.properties': 'log.level=verbose\nlisteners=\n' });
    const run = startCli(['standalone', join(dir, 'w.properties')]);
    expect(await run.exited).toBe(1);
    expect(run.stderr().trim()).toBe(
      `tributary: CONFIG_INVALID: Invalid worker config ${join(dir, 'w.properties')}: log.level: "verbose" is not a log level; accepted: trace, debug, info, warn, error, fatal, silent`,
    );
  }, 30_000);

  it("refuses a bad task setting only the worker gives as the worker config's, before anything starts, with or without a connector", async () => {
    const dir = await workdir({
      'w.properties': 'offset.flush.interval.ms=abc\nlisteners=\n',
      'c.properties': 'name=c\nconnector.class=./examples/datagen/src/index.ts#DatagenConnector\ntopic=t\nmax.records=1\n',
    });
    const expected = `tributary: CONFIG_INVALID: Invalid worker config ${join(dir, 'w.properties')} (worker config): Invalid configuration offset.flush.interval.ms: expected integer >= 1, got "abc"`;
    for (const args of [
      ['standalone', join(dir, 'w.properties'), join(dir, 'c.properties')],
      ['standalone', join(dir, 'w.properties')],
    ]) {
      const run = startCli(args);
      expect(await run.exited).toBe(1);
      expect(run.stderr().trim()).toBe(expected);
    }
  }, 30_000);

  it("warns of a bad worker value a connector can override, and names it as the worker's when a connector takes it", async () => {
    const dir = await workdir({
      'w.properties': 'task.max.in.flight.records=abc\nlisteners=\n',
      'c.properties': 'name=c\nconnector.class=./examples/datagen/src/index.ts#DatagenConnector\ntopic=t\nmax.records=1\n',
    });
    const run = startCli(['standalone', join(dir, 'w.properties'), join(dir, 'c.properties')]);
    expect(await run.exited).toBe(1);
    const problem = `Invalid configuration task.max.in.flight.records: expected integer >= 1, got "abc" (the worker config's value, which a connector config can override)`;
    const lines = run.stderr().trim().split('\n');
    const warnings = lines.filter((l) => l.includes('"level":40')).map((l) => JSON.parse(l).msg);
    expect(warnings).toEqual([`worker config: ${problem}; a connector that does not set its own is refused`]);
    expect(lines.at(-1)).toBe(
      `tributary: CONFIG_INVALID: Invalid connector config ${join(dir, 'c.properties')} (connector 'c'): ${problem}`,
    );
  }, 30_000);

  it('writes pretty lines when log.format=pretty', async () => {
    const dir = await workdir({
      'c.properties': 'name=c\nconnector.class=./examples/datagen/src/index.ts#DatagenConnector\ntopic=t\nmax.records=1\n',
    });
    await writeFile(
      join(dir, 'w.properties'),
      `listeners=\nlog.format=pretty\noffset.storage.file.filename=${join(dir, 'o.json')}\n`,
    );
    const run = startCli(['standalone', join(dir, 'w.properties'), join(dir, 'c.properties')]);
    await waitFor(() => run.stdout().includes('"topic":"t"'), 30_000, 'a record');
    run.child.kill('SIGINT');
    expect(await run.exited).toBe(0);
    expect(run.stderr()).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}\[c\/0\] task started with no committed offsets/m);
    expect(run.stderr()).toMatch(/INFO {2}\[c\/0\] final offset flush: 1 offset committed/);
    expect(run.stderr()).not.toContain('{"level"');
  }, 30_000);

  it('refuses embedded.output naming a file, saying a directory or stdout is wanted', async () => {
    const dir = await workdir({ 'out.jsonl': '' });
    await writeFile(join(dir, 'w.properties'), `listeners=\nembedded.output=${join(dir, 'out.jsonl')}\n`);
    const run = startCli(['standalone', join(dir, 'w.properties')]);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain(`embedded.output: "${join(dir, 'out.jsonl')}" is a file, not a directory`);
    expect(run.stderr()).not.toContain('EEXIST');
  }, 30_000);

  it('says in one line that Kafka cannot be reached on a wrong port, without stacks', async () => {
    const port = await closedPort();
    const dir = await workdir({ 'w.properties': `bootstrap.servers=127.0.0.1:${port}\nlisteners=\n` });
    const run = startCli(['standalone', join(dir, 'w.properties')]);
    expect(await run.exited).toBe(1);
    const lines = run.stderr().trim().split('\n');
    const problems = lines.filter((l) => !l.startsWith('{') || JSON.parse(l).level >= 40);
    expect(problems).toEqual([
      expect.stringContaining(`cannot connect to Kafka: connect ECONNREFUSED 127.0.0.1:${port}; kafkajs keeps retrying`),
      `tributary: BROKER_UNAVAILABLE: Could not connect the admin client to Kafka: Connection error: connect ECONNREFUSED 127.0.0.1:${port}`,
    ]);
    expect(run.stderr()).not.toContain('"stack"');
  }, 60_000);

  it("runs the file-source README's command as written, its .ts connector path included", async () => {
    const readme = await readFile(join(root, 'examples', 'file-source', 'README.md'), 'utf8');
    const properties = /```properties\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    const command = /```sh\n(npm run[^\n]*)\n```/.exec(readme)?.[1] ?? '';
    expect(command).toBe('npm run -s tributary -- standalone worker.properties app-log.properties');
    const dir = await workdir({ 'app.log': 'first line\nsecond line\n' });
    await writeFile(join(dir, 'app-log.properties'), properties.replace('file=/var/log/app.log', `file=${join(dir, 'app.log')}`));
    await writeFile(join(dir, 'worker.properties'), `listeners=\noffset.storage.file.filename=${join(dir, 'o.json')}\n`);
    // The README's command, run where it says (the repository's root), with the two files in a temporary folder.
    const [npm, ...args] = command
      .replace('worker.properties', join(dir, 'worker.properties'))
      .replace('app-log.properties', join(dir, 'app-log.properties'))
      .split(' ');
    // A process group of its own, so that SIGINT reaches npm and everything under it, as Ctrl-C does.
    const child = spawn(npm as string, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await waitFor(() => out.includes('second line') || child.exitCode !== null, 30_000, 'the second line');
    } finally {
      if (child.exitCode === null) process.kill(-(child.pid as number), 'SIGINT');
    }
    await exited;
    // npm itself dies of the SIGINT (it forwards no signal when not on a terminal); the worker under it stops cleanly.
    await waitFor(() => err.includes('worker stopped'), 20_000, 'the worker to stop');
    expect(err).toContain('final offset flush: 1 offset committed');
    const lines = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.topic, l.value])).toEqual([
      ['app-log', 'first line'],
      ['app-log', 'second line'],
    ]);
  }, 60_000);

  it('names the connector file and the partition of an initial offset that does not decode', async () => {
    const dir = await workdir({});
    await writeFile(
      join(dir, 'c.json'),
      JSON.stringify({
        name: 'c',
        config: { 'connector.class': './examples/datagen/src/index.ts#DatagenConnector', topic: 't' },
        offsets: [{ partition: { task: 0, sequence: 0 }, offset: { seq: 'one' } }],
      }),
    );
    await writeFile(join(dir, 'w.properties'), `listeners=\noffset.storage.file.filename=${join(dir, 'o.json')}\n`);
    const run = startCli(['standalone', join(dir, 'w.properties'), join(dir, 'c.json')]);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain(
      `OFFSET_DECODE: Offset of connector 'c' for partition {"task":0,"sequence":0} does not decode`,
    );
    expect(run.stderr()).toContain(`(offsets of connector config ${join(dir, 'c.json')})`);
  }, 30_000);
});
