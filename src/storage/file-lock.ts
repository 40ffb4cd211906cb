import { randomUUID } from 'node:crypto';
import { readFileSync, readlinkSync, unlinkSync } from 'node:fs';
import { link, readFile, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { TributaryError } from '../api/errors.js';

/** Who holds a lock, as written in the lock file. */
export interface LockHolder {
  readonly pid: number;
  readonly hostname: string;
  /** When the lock was taken (ISO 8601). */
  readonly since: string;
  /** Linux: the PID namespace (`/proc/self/ns/pid`), so that a pid is only judged in its own. */
  readonly pidNamespace?: string | undefined;
  /** Linux: the boot id; a lock from an earlier boot is stale whatever its pid. */
  readonly bootId?: string | undefined;
}

/** Locks this process holds, released by the `exit` handler if their owner did not. */
const held = new Set<FileLock>();
let exitHandlerInstalled = false;

/**
 * An exclusive lock on a file, held as a lock file beside it (`<file>.lock`) naming the
 * process that holds it (pid, host name, since when).
 *
 * - Taking it is atomic: the holder's details are written to a temporary file that is then
 *   hard-linked to the lock file name, which fails if the lock file exists, so a lock file is
 *   never seen half-written.
 * - A lock file whose process is gone (same host and PID namespace, no such pid or an earlier
 *   boot) is stale and is taken over. Removing a stale lock is serialized by a short-lived
 *   takeover lock and checked again under it (see {@link takeOverStaleLock}), so two
 *   processes taking over at once cannot both win.
 * - A lock held by a live process makes {@link FileLock.acquire} fail with
 *   `OFFSET_STORE_LOCKED` naming the file and the holder. The holder touches its lock file every
 *   {@link REFRESH_MS}; a lock of a process on another host or in another PID namespace (another
 *   container, or the same container restarted after a crash), whose pid cannot be checked, is
 *   stale once it has not been touched for {@link FOREIGN_STALE_MS}.
 * - Before each write the holder checks with {@link FileLock.verify} that the lock is still its
 *   own, so a holder whose lock was taken over (e.g. it was frozen past that time) fails loudly
 *   instead of overwriting the new holder's file.
 * - Released by {@link FileLock.release}, or at process exit if still held; a process killed
 *   with SIGKILL leaves a stale lock that the next run takes over.
 *
 * Limits: a pid reused by an unrelated process after a crash makes a stale lock look held
 * (the error says how to remove it).
 *
 * @example
 * ```ts
 * const lock = await FileLock.acquire('/var/lib/tributary/offsets.json');
 * try {
 *   // ... sole writer of offsets.json ...
 * } finally {
 *   await lock.release();
 * }
 * ```
 */
export class FileLock {
  private refreshTimer: NodeJS.Timeout | undefined;

  private constructor(
    /** The file locked. */
    readonly target: string,
    /** The lock file, `<target>.lock`. */
    readonly path: string,
    private readonly content: string,
  ) {}

  /**
   * Takes the lock on `target`. Rejects with `OFFSET_STORE_LOCKED` when another live process
   * (or this one) holds it, or with `OFFSET_STORE_UNWRITABLE` when the lock file cannot be
   * created (e.g. the folder is not writable).
   */
  static async acquire(target: string): Promise<FileLock> {
    const path = `${target}.lock`;
    const me: LockHolder = { ...self(), since: new Date().toISOString() };
    // The token makes every lock's text unique: release and takeover compare texts.
    const content = `${JSON.stringify({ ...me, token: randomUUID() })}\n`;
    const tmp = `${path}.${process.pid}.${randomUUID()}.tmp`;
    const unwritable = (e: unknown) =>
      new TributaryError(
        'OFFSET_STORE_UNWRITABLE',
        `Offsets file ${target} cannot be written: creating its lock file ${path} failed (${(e as Error).message}). ` +
          'Give offset.storage.file.filename a path in a folder this worker can write.',
        { cause: e },
      );
    try {
      await writeFile(tmp, content, { flag: 'wx' });
    } catch (e) {
      throw unwritable(e);
    }
    try {
      for (let attempt = 0; ; attempt++) {
        try {
          await createLockFile(tmp, path, content);
          const lock = new FileLock(target, path, content);
          held.add(lock);
          installExitHandler();
          lock.refreshTimer = setInterval(() => void lock.refresh(), REFRESH_MS);
          lock.refreshTimer.unref?.();
          return lock;
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw unwritable(e);
        }
        const seen = await readFile(path, 'utf8').catch((e: NodeJS.ErrnoException) => {
          if (e.code === 'ENOENT') return undefined; // released meanwhile: try again
          throw unwritable(e);
        });
        if (seen === undefined) continue;
        const holder = parseHolder(seen);
        const checkable = holder !== undefined && holder.hostname === me.hostname && holder.pidNamespace === me.pidNamespace;
        const stale =
          holder !== undefined &&
          (checkable
            ? holder.bootId !== me.bootId || !processAlive(holder.pid)
            : (await stat(path).then(
                (st) => Date.now() - st.mtimeMs,
                () => 0,
              )) > FOREIGN_STALE_MS);
        if (!stale || attempt >= 200) throw lockedError(target, path, holder, seen);
        await takeOverStaleLock(path, seen);
      }
    } finally {
      await unlink(tmp).catch(() => {});
    }
  }

  /**
   * Rejects with `OFFSET_STORE_LOCKED` when the lock file is no longer this lock's (another
   * process took it over, or it was removed by hand): the file must not be written then. A lock
   * file that cannot be read for another reason rejects with `OFFSET_FLUSH_FAILED` (retriable).
   */
  async verify(): Promise<void> {
    let seen: string | undefined;
    try {
      seen = await readFile(this.path, 'utf8');
    } catch (e) {
      // Only a missing file is a removed lock: EMFILE, EIO or EACCES on a network mount pass,
      // and taking them for a lost lock would fail every task for good.
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new TributaryError(
          'OFFSET_FLUSH_FAILED',
          `Could not check the lock file ${this.path} of offsets file ${this.target} before writing it: ${(e as Error).message}`,
          { cause: e },
        );
      }
    }
    if (seen === this.content) return;
    const holder = seen === undefined ? undefined : parseHolder(seen);
    throw new TributaryError(
      'OFFSET_STORE_LOCKED',
      `Offsets file ${this.target} is no longer locked by this worker: its lock file ${this.path} ${
        seen === undefined
          ? 'was removed'
          : `now names ${holder ? `process ${holder.pid} on ${holder.hostname}` : 'an unknown holder'}`
      }, so this worker no longer writes it (another worker may be using the file). Stop one of them.`,
    );
  }

  /** Touches the lock file, so that processes which cannot check this pid see the lock is alive. */
  private async refresh(): Promise<void> {
    const seen = await readFile(this.path, 'utf8').catch(() => undefined);
    if (seen !== this.content) return;
    const now = new Date();
    await utimes(this.path, now, now).catch(() => {});
  }

  /** Releases the lock (removes the lock file if it is still this lock's). Idempotent. */
  async release(): Promise<void> {
    clearInterval(this.refreshTimer);
    if (!held.delete(this)) return;
    const seen = await readFile(this.path, 'utf8').catch(() => undefined);
    if (seen === this.content) await unlink(this.path).catch(() => {});
  }

  /** Synchronous release for the process `exit` handler. */
  private releaseSync(): void {
    clearInterval(this.refreshTimer);
    held.delete(this);
    try {
      if (readFileSync(this.path, 'utf8') === this.content) unlinkSync(this.path);
    } catch {
      // Nothing to release.
    }
  }

  /** @internal Releases every lock still held; run at process exit. */
  static releaseAllSync(): void {
    for (const lock of [...held]) lock.releaseSync();
  }
}

/** This process as a lock holder names it. */
function self(): Omit<LockHolder, 'since'> {
  const read = (f: () => string): string | undefined => {
    try {
      return f().trim();
    } catch {
      return undefined; // not Linux, or /proc not mounted
    }
  };
  return {
    pid: process.pid,
    hostname: hostname(),
    pidNamespace: read(() => readlinkSync('/proc/self/ns/pid')),
    bootId: read(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8')),
  };
}

function installExitHandler(): void {
  if (exitHandlerInstalled) return;
  exitHandlerInstalled = true;
  process.on('exit', () => FileLock.releaseAllSync());
}

/**
 * Creates the lock file with its content in one step (a hard link of the written temporary
 * file, which fails if the name exists); where the file system has no hard links, an
 * exclusive create then a write (a reader may then briefly see it empty: an unknown holder).
 */
async function createLockFile(tmp: string, path: string, content: string): Promise<void> {
  try {
    await link(tmp, path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw e;
    await writeFile(path, content, { flag: 'wx' });
  }
}

/**
 * Removes a stale lock file, unless what is there by then is not the stale lock judged (the
 * holder released it, or another process took it over first). Only the holder of a short-lived
 * takeover lock (`<lock>.takeover`, created exclusively) may remove a stale lock, and it checks
 * the content again while holding it, so two takeovers at once cannot remove a fresh lock.
 * When another takeover is under way, waits a moment and returns (the caller tries again).
 * A takeover lock older than {@link TAKEOVER_STALE_MS} (its process died mid-takeover) is removed.
 * @internal Exported for the test of that race.
 */
export async function takeOverStaleLock(path: string, stale: string): Promise<void> {
  const mutex = `${path}.takeover`;
  try {
    await writeFile(mutex, `${process.pid}\n`, { flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    const age = await stat(mutex).then(
      (st) => Date.now() - st.mtimeMs,
      () => 0,
    );
    if (age > TAKEOVER_STALE_MS) await unlink(mutex).catch(() => {});
    else await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
    return;
  }
  try {
    const now = await readFile(path, 'utf8').catch(() => undefined);
    if (now === stale) await unlink(path).catch(() => {});
  } finally {
    await unlink(mutex).catch(() => {});
  }
}

/** How often, in ms, a holder touches its lock file. */
export const REFRESH_MS = 10_000;
/** A lock of a process whose pid cannot be checked (another host or PID namespace) not touched for this long, in ms, is stale. */
export const FOREIGN_STALE_MS = 60_000;

/** A takeover lock this old was left by a process that died while taking a stale lock over. */
const TAKEOVER_STALE_MS = 10_000;

function parseHolder(text: string): LockHolder | undefined {
  try {
    const v = JSON.parse(text) as Partial<LockHolder>;
    if (typeof v.pid === 'number' && typeof v.hostname === 'string') {
      return {
        pid: v.pid,
        hostname: v.hostname,
        since: String(v.since ?? ''),
        pidNamespace: typeof v.pidNamespace === 'string' ? v.pidNamespace : undefined,
        bootId: typeof v.bootId === 'string' ? v.bootId : undefined,
      };
    }
  } catch {
    // Not a lock file of ours.
  }
  return undefined;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists but belongs to another user.
    return (e as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

function lockedError(target: string, path: string, holder: LockHolder | undefined, seen: string): TributaryError {
  const who =
    holder === undefined
      ? `an unknown holder (lock file ${path} holds ${JSON.stringify(seen.slice(0, 80))})`
      : holder.pid === process.pid && holder.hostname === hostname() && holder.pidNamespace === self().pidNamespace
        ? `this process (pid ${holder.pid}): another offset store in it has the same file`
        : `process ${holder.pid} on ${holder.hostname}${holder.since ? ` since ${holder.since}` : ''}${
            holder.hostname === hostname() && holder.pidNamespace !== self().pidNamespace
              ? ` (in another PID namespace, e.g. another container: whether it still runs cannot be checked; the lock is taken over once it has not been refreshed for ${FOREIGN_STALE_MS / 1000} s)`
              : holder.hostname !== hostname()
                ? ` (on another host: the lock is taken over once it has not been refreshed for ${FOREIGN_STALE_MS / 1000} s)`
                : ''
          }`;
  return new TributaryError(
    'OFFSET_STORE_LOCKED',
    `Offsets file ${target} is in use by ${who}. Two workers on one offsets file overwrite each other's offsets: ` +
      `stop that worker, or give this one its own offset.storage.file.filename. If no such process is running, remove ${path}.`,
  );
}
