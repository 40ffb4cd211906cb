import { mkdirSync, type Stats, statSync } from 'node:fs';
import { dirname, isAbsolute, sep } from 'node:path';

/**
 * Makes sure `folder` exists as a folder, creating its missing levels one by one, and fails
 * with an error naming the folder, the level that failed and the system's error code.
 *
 * Not `mkdir(folder, { recursive: true })`: on Node 20 that never returns for a folder the
 * system answers ENOENT for although its parent exists (under `/proc`, say): the promise never
 * settles while a thread of libuv's pool spins, and `mkdirSync` blocks the event loop for good,
 * so the process no longer even handles SIGTERM. Here the first existing ancestor is found with
 * `stat`, it must be a folder, and each missing level below it is made with a plain `mkdir`,
 * whose first error is final.
 *
 * The path is never cleaned up by its text (no `path.resolve`): in `link/../new` the `..` is the
 * parent of the folder `link` points to, as the system reads it when the file is opened, so each
 * level is the text of the path up to it and the system resolves it.
 *
 * @param folder - The folder (a relative path is taken from the working directory).
 * @throws Error - `Folder <folder> cannot be created: <level> <why> (<code>)`.
 */
export async function ensureFolder(folder: string): Promise<void> {
  // The same walk as the synchronous one: a few stat and mkdir calls, once at start, each of
  // which answers at once (only the recursive mkdir spins), so it need not leave the thread.
  ensureFolderSync(folder);
}

/** {@link ensureFolder}, synchronously, for a caller that cannot wait (a constructor). */
export function ensureFolderSync(folder: string): void {
  const target = absolute(folder);
  const missing: string[] = [];
  for (let at = target; ; ) {
    let found: Stats | NodeJS.ErrnoException;
    try {
      found = statSync(at);
    } catch (e) {
      found = e as NodeJS.ErrnoException;
    }
    if (isStats(found)) {
      if (!found.isDirectory()) throw folderError(target, at, 'is not a folder', 'ENOTDIR');
      break;
    }
    if (found.code !== 'ENOENT' && found.code !== 'ENOTDIR')
      throw folderError(target, at, 'cannot be looked at', found.code, found);
    const up = dirname(at);
    if (up === at) throw folderError(target, at, 'does not exist', found.code, found);
    missing.push(at);
    at = up;
  }
  for (const level of missing.reverse()) {
    try {
      mkdirSync(level);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' && isFolderSync(level)) continue;
      throw creationError(target, level, e as NodeJS.ErrnoException);
    }
  }
}

/** `folder` from the working directory when relative, its text otherwise untouched (see {@link ensureFolder}). */
function absolute(folder: string): string {
  return isAbsolute(folder) ? folder : `${process.cwd()}${sep}${folder}`;
}

function isFolderSync(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function isStats(v: Stats | NodeJS.ErrnoException): v is Stats {
  return typeof (v as Stats).isDirectory === 'function';
}

function creationError(target: string, level: string, e: NodeJS.ErrnoException): Error {
  // ENOENT although the parent was just found: a file system that refuses new folders (/proc, /sys).
  const why =
    e.code === 'ENOENT'
      ? `could not be created in ${dirname(level)}, which exists but refuses new folders (a virtual file system such as /proc?)`
      : e.code === 'EACCES' || e.code === 'EPERM' || e.code === 'EROFS'
        ? `could not be created: no permission to write ${dirname(level)}`
        : 'could not be created';
  return folderError(target, level, why, e.code, e);
}

function folderError(target: string, level: string, why: string, code: string | undefined, cause?: unknown): Error {
  const head = level === target ? `${level} ${why}` : `its level ${level} ${why}`;
  return new Error(`folder ${target} cannot be created: ${head} (${code ?? 'error'})`, { cause });
}
