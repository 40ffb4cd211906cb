import { randomUUID } from 'node:crypto';
import { open, readdir, readFile, readlink, realpath, rename, rm } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { TributaryError } from '../api/errors.js';
import { setField } from '../api/json.js';
import type { JsonObject, OffsetEntry } from '../runtime/ports.js';
import { ensureFolder } from './ensure-folder.js';
import { FileLock } from './file-lock.js';
import { MemoryOffsetStore } from './memory-offset-store.js';

const FORMAT = 'tributary-offsets/1';

/**
 * Offsets in a local JSON file, for standalone workers (`offset.storage.file.filename`).
 *
 * Every write replaces the whole file atomically: a temporary file beside it is written and
 * fsynced, then renamed over it, and the folder is fsynced, so a crash leaves either the old
 * or the new file. Every write has a temporary file of its own. A file that cannot be read as
 * offsets is an error naming the file, never a silent reset. (Kafka Connect's standalone file
 * is Java-serialized and is not read here.)
 *
 * One writer per file: `start()` takes a lock file beside it (`<file>.lock`, see
 * {@link FileLock}) and fails with `OFFSET_STORE_LOCKED`, naming the file and the process
 * holding it, while another live process (or another store in this one) has it; a lock left
 * by a process that is gone is taken over. `stop()` releases it. `start()` then writes the
 * file once, so a file that cannot be written fails the start (`OFFSET_STORE_UNWRITABLE`)
 * before any record is sent, rather than the first flush.
 *
 * A symbolic link (to a persistent volume, say) is followed at start: the lock, the temporary
 * files and the rename are beside the file it leads to, so the link stays a link and a worker
 * given the file's own path takes the same lock.
 */
export class FileOffsetStore extends MemoryOffsetStore {
  private queue: Promise<void> = Promise.resolve();
  private lock: FileLock | undefined;
  /** The file written: {@link filename} with its links followed, set by `start()`. */
  private target: string;

  constructor(readonly filename: string) {
    super();
    this.target = filename;
  }

  override async start(): Promise<void> {
    if (this.lock !== undefined) return;
    try {
      this.target = await linkTarget(this.filename);
    } catch (e) {
      throw unwritable(this.filename, `finding the file it names failed (${(e as Error).message})`, e);
    }
    const lock = await FileLock.acquire(this.target);
    try {
      let text: string | undefined;
      try {
        text = await readFile(this.target, 'utf8');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
          throw new TributaryError('OFFSET_STORE_CORRUPT', `Cannot read offsets file ${this.filename}: ${(e as Error).message}`, {
            cause: e,
          });
        }
      }
      await removeLeftTemporaryFiles(this.target);
      // Started again after a stop: the file is what holds, not what this store last knew.
      this.data.clear();
      if (text !== undefined) {
        for (const [connector, entries] of parseOffsetsFile(this.filename, text)) this.apply(connector, entries);
      }
      try {
        await this.persist();
      } catch (e) {
        throw unwritable(this.filename, (e as Error).message, e);
      }
    } catch (e) {
      this.data.clear();
      await lock.release();
      throw e;
    }
    this.lock = lock;
  }

  /** Waits for the writes under way, then releases the lock. Offsets stay readable in memory. */
  override async stop(): Promise<void> {
    await this.queue;
    const lock = this.lock;
    this.lock = undefined;
    await lock?.release();
  }

  override write(connector: string, entries: readonly OffsetEntry[]): Promise<void> {
    const next = this.queue.then(async () => {
      const before = this.snapshot();
      this.apply(connector, entries);
      try {
        await this.persist();
      } catch (e) {
        this.restore(before);
        throw e;
      }
    });
    this.queue = next.catch(() => {});
    return next;
  }

  private snapshot(): Map<string, Map<string, { partition: JsonObject; offset: JsonObject }>> {
    return new Map([...this.data].map(([c, m]) => [c, new Map(m)]));
  }

  private restore(snapshot: Map<string, Map<string, { partition: JsonObject; offset: JsonObject }>>): void {
    this.data.clear();
    for (const [c, m] of snapshot) this.data.set(c, m);
  }

  private async persist(): Promise<void> {
    // Taken over meanwhile (this process was frozen past the lock's staleness): do not overwrite.
    await this.lock?.verify();
    const connectors: Record<string, { partition: JsonObject; offset: JsonObject }[]> = {};
    for (const [connector, partitions] of [...this.data].sort(([a], [b]) => a.localeCompare(b))) {
      setField(connectors, connector, [...partitions.values()]);
    }
    const text = `${JSON.stringify({ format: FORMAT, connectors }, null, 1)}\n`;
    const dir = dirname(this.target);
    await ensureFolder(dir);
    const tmp = join(dir, `.${basename(this.target)}.${process.pid}.${randomUUID()}.tmp`);
    const handle = await open(tmp, 'wx');
    try {
      try {
        await handle.writeFile(text, 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, this.target);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
    const dirHandle = await open(dir, 'r');
    try {
      await dirHandle.sync();
    } finally {
      await dirHandle.close();
    }
  }
}

function unwritable(filename: string, why: string, cause: unknown): TributaryError {
  return new TributaryError(
    'OFFSET_STORE_UNWRITABLE',
    `Offsets file ${filename} cannot be written: ${why}. Give offset.storage.file.filename a path in a folder this worker can write.`,
    { cause },
  );
}

/**
 * Removes the temporary files of writers killed between writing one and renaming it (each a
 * whole copy of the offsets): those named as {@link FileOffsetStore} names them for this file,
 * `.<name>.<pid>.<uuid>.tmp`, and no others (`.<name>.bak.<pid>.<uuid>.tmp` is another file's).
 * Called with the lock held: no live writer has one.
 */
async function removeLeftTemporaryFiles(target: string): Promise<void> {
  const prefix = `.${basename(target)}.`;
  const left = (await readdir(dirname(target))).filter(
    (n) => n.startsWith(prefix) && n.endsWith('.tmp') && WRITER_AND_UUID.test(n.slice(prefix.length, -'.tmp'.length)),
  );
  await Promise.all(left.map((n) => rm(join(dirname(target), n), { force: true })));
}

/** The middle of a temporary file's name: the writer's pid and a random UUID. */
const WRITER_AND_UUID = /^\d+\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The path of the file `file` names, with its symbolic links followed as the system follows
 * them (also a dangling one, whose file is not written yet: its folder is created when missing).
 * Each step resolves the link's folder with realpath first, so a `..` after a linked folder
 * goes where the kernel goes, not where the text of the path points.
 */
async function linkTarget(file: string): Promise<string> {
  let path = file;
  for (let hops = 0; hops <= 40; hops++) {
    try {
      return await realpath(path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    await ensureFolder(dirname(path));
    const here = join(await realpath(dirname(path)), basename(path));
    let link: string;
    try {
      link = await readlink(here);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // No file yet (and no link): it is created in its folder.
      if (code === 'ENOENT' || code === 'EINVAL') return here;
      throw e;
    }
    // Not path.resolve: it would take a `..` in the link away by its text, where the system
    // goes up from the folder a linked folder leads to.
    path = isAbsolute(link) ? link : `${dirname(here)}/${link}`;
  }
  throw new Error('more than 40 symbolic links in a row (a loop?)');
}

/** Parses an offsets file; throws OFFSET_STORE_CORRUPT naming the file and what is wrong. */
export function parseOffsetsFile(filename: string, text: string): Array<[string, OffsetEntry[]]> {
  const corrupt = (what: string) =>
    new TributaryError(
      'OFFSET_STORE_CORRUPT',
      `Offsets file ${filename} is corrupt: ${what}. It was left untouched; restore it from a backup, or move it away to start every connector from no offsets.`,
    );
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw corrupt(`not JSON (${(e as Error).message})`);
  }
  if (!isObject(doc) || doc.format !== FORMAT) throw corrupt(`expected a JSON object with "format": "${FORMAT}"`);
  if (!isObject(doc.connectors)) throw corrupt('expected "connectors" to be an object of connector name to entries');
  const out: Array<[string, OffsetEntry[]]> = [];
  for (const [connector, entries] of Object.entries(doc.connectors)) {
    if (!Array.isArray(entries)) throw corrupt(`connectors.${connector} is not an array`);
    entries.forEach((entry, i) => {
      if (!isObject(entry) || !isObject(entry.partition) || !isObject(entry.offset)) {
        throw corrupt(`connectors.${connector}[${i}] needs "partition" and "offset" objects`);
      }
    });
    out.push([connector, entries as OffsetEntry[]]);
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
