#!/usr/bin/env node
// `npm test`: the whole suite, as two vitest runs side by side.
//
// - kafka: the `integration` project, one file at a time against one shared broker
//   (test/integration/global-setup.ts). Most of its time is spent waiting on Kafka.
// - local: the `unit` and `integration-no-kafka` projects (see NO_KAFKA_FILES in
//   vitest.config.ts), one worker, so that the Kafka tests keep a core of a 2-core machine.
//
// In one vitest process they cannot overlap: vitest runs a project with fileParallelism false
// after all the others. Both outputs are shown as they come, each line tagged with its run; the
// suite fails when either run fails (each exit code is printed at the end). Arguments after
// `npm test --` go to both runs (a file filter that matches only one run's files is fine).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const vitest = fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url));
const extra = process.argv.slice(2);
const runs = [
  { tag: 'kafka', args: ['--project', 'integration'] },
  { tag: 'local', args: ['--project', 'unit', '--project', 'integration-no-kafka', '--maxWorkers=1'] },
];

const color = process.stdout.isTTY ? { FORCE_COLOR: '1' } : {};
const started = Date.now();
const children = runs.map(({ tag, args }) => {
  const argv = [vitest, 'run', ...args, ...(extra.length > 0 ? ['--passWithNoTests', ...extra] : [])];
  const child = spawn(process.execPath, argv, {
    cwd: root,
    env: { ...process.env, ...color },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const [stream, out] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ]) {
    createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) => out.write(`[${tag}] ${line}\n`));
  }
  const done = new Promise((resolve) => {
    child.on('error', (e) => resolve({ tag, code: 1, why: `could not start: ${e.message}` }));
    child.on('close', (code, signal) =>
      resolve({ tag, code: code ?? 1, why: signal ? `killed by ${signal}` : `exit code ${code}`, at: Date.now() }),
    );
  });
  return { child, done };
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const { child } of children) child.kill(signal);
  });
}

const results = await Promise.all(children.map((c) => c.done));
process.stdout.write('\nnpm test: both runs ended\n');
for (const r of results) {
  const seconds = r.at ? ` after ${Math.round((r.at - started) / 1000)} s` : '';
  process.stdout.write(
    `  ${r.tag} (${runs.find((x) => x.tag === r.tag)?.args.join(' ')}): ${r.code === 0 ? 'passed' : 'FAILED'}, ${r.why}${seconds}\n`,
  );
}
process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0;
