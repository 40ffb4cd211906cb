/**
 * Fetching jars with Maven into a cache folder, shared by the test broker (test/kafka/broker.ts)
 * and the benchmark's Kafka Connect (bench/connect/fetch.ts).
 */
import { execFile } from 'node:child_process';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';

/** What a command printed and how it exited (127: not installed). */
export interface CommandResult {
  readonly code: number;
  readonly output: string;
}

/** Runs a command to completion; never rejects. */
export function runCommand(cmd: string, args: readonly string[]): Promise<CommandResult> {
  return new Promise((done) => {
    execFile(cmd, [...args], { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const output = `${stdout}${stderr}`;
      if (error === null) return done({ code: 0, output });
      const code = typeof error.code === 'number' ? error.code : error.code === 'ENOENT' ? 127 : 1;
      done({ code, output: output || error.message });
    });
  });
}

/**
 * Copies the runtime dependencies of `pom` (with `-Dkafka.version=version`) into `libs`:
 * Maven offline first (a filled ~/.m2 needs no network), then online; into a temporary folder
 * that is renamed at the end, so an interrupted fetch never leaves a half-filled cache. Resolves
 * with Maven's result when it failed or `complete(folder)` says a jar is missing; a concurrent
 * fetch that won the race counts as success.
 */
export async function mavenCopyDependencies(
  pom: string,
  version: string,
  libs: string,
  complete: (folder: string) => boolean | Promise<boolean>,
): Promise<{ ok: true } | { ok: false; result: CommandResult }> {
  const staging = `${libs}.tmp-${process.pid}-${Date.now()}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(dirname(libs), { recursive: true });
  const args = [
    '-q',
    '-B',
    '-f',
    pom,
    `-Dkafka.version=${version}`,
    'dependency:copy-dependencies',
    '-DincludeScope=runtime',
    `-DoutputDirectory=${staging}`,
  ];
  let result = await runCommand('mvn', ['-o', ...args]);
  if (result.code !== 0 && result.code !== 127) result = await runCommand('mvn', args);
  if (result.code !== 0 || !(await complete(staging))) {
    await rm(staging, { recursive: true, force: true });
    return { ok: false, result };
  }
  try {
    await rename(staging, libs);
  } catch (e) {
    // Another process won the race: its copy is as good as ours.
    await rm(staging, { recursive: true, force: true });
    if (!(await complete(libs))) throw e;
  }
  return { ok: true };
}
