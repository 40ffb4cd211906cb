/**
 * Watching a spawned process in a test: what it has written so far, how it exited, and waiting
 * on a condition of that output.
 */
import type { ChildProcess } from 'node:child_process';

/** A spawned process with its output so far and its exit code (null when ended by a signal). */
export interface WatchedProcess {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Collects `child`'s stdout and stderr (spawned with `stdio` 'pipe' for both) from now on. */
export function watchProcess(child: ChildProcess): WatchedProcess {
  let out = '';
  let err = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Checks `check` every 50 ms until it holds; throws after `ms` ("timed out waiting for `what`"). */
export async function waitFor(check: () => boolean, ms: number, what?: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(what === undefined ? 'timed out' : `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
