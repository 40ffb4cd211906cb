import { createHash } from 'node:crypto';
import { fstatSync, readSync } from 'node:fs';
import { type FileHandle, open, stat } from 'node:fs/promises';
import type { Clock, Logger } from 'tributary-connect';
import { bytePositionOfConnectOffset } from './connect-position.js';

/** How many bytes at the start of a file its {@link Fingerprint} covers at most. */
export const FINGERPRINT_BYTES = 1024;

/**
 * What identifies a file: the SHA-256 (hex) of its first `bytes` bytes, `bytes` being the
 * position read up to or {@link FINGERPRINT_BYTES}, whichever is smaller. Appending to a file
 * leaves it as it is; a file replaced or truncated and rewritten almost always has other first
 * bytes. (Inode numbers are not used: they are reused after a delete and change with a copy.)
 */
export interface Fingerprint {
  readonly bytes: number;
  readonly sha256: string;
  /** As offsets carry it: `<bytes>:<sha256>`, a string, so an offset stays flat (one object per record, keys in order). */
  readonly text: string;
}

const FINGERPRINT_TEXT = /^(0|[1-9]\d{0,15}):([0-9a-f]{64})$/;

/** The fingerprint an offset's `<bytes>:<sha256>` names, or undefined when the text is not one. */
export function parseFingerprint(text: string): Fingerprint | undefined {
  const m = FINGERPRINT_TEXT.exec(text);
  if (!m) return undefined;
  const bytes = Number(m[1]);
  return Number.isSafeInteger(bytes) ? { bytes, sha256: m[2] as string, text } : undefined;
}

/** Where to resume a file: a byte position and, when known, the fingerprint of the file it was read from. */
export interface FilePosition {
  readonly position: number;
  readonly fingerprint?: Fingerprint | undefined;
}

/**
 * Receives each complete line, decoded, the byte position just after it (its newline
 * included) and the file's fingerprint at that position: the offset to commit. Called
 * synchronously, in file order; the caller builds its record here, so a line costs no object
 * of its own (the fingerprint is shared by the lines past its first bytes).
 */
export type LineSink = (text: string, position: number, fingerprint: Fingerprint) => void;

/** What one poll round may still take; {@link TrackedFile.readInto} lowers it as it reads. */
export interface ReadBudget {
  lines: number;
  bytes: number;
}

/** How a {@link TrackedFile} reads. */
export interface TrackedFileOptions {
  readonly follow: boolean;
  readonly encoding: 'utf8' | 'latin1';
  readonly pollIntervalMs: number;
  readonly maxLineBytes: number;
  /** The read buffer, shared by every file of a task (they are read one at a time); at least {@link FINGERPRINT_BYTES}. */
  readonly buffer: Buffer;
  readonly clock: Clock;
  readonly logger: Logger;
}

const NEWLINE = 0x0a;
const START: FilePosition = { position: 0 };

/** The fingerprint of `bytes`. */
function fingerprintOf(bytes: Buffer): Fingerprint {
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  return { bytes: bytes.length, sha256, text: `${bytes.length}:${sha256}` };
}

const EMPTY_FINGERPRINT = fingerprintOf(Buffer.alloc(0));
const CARRIAGE_RETURN = 0x0d;

/**
 * One file read line by line from a byte position, with bounded memory: a shared read
 * buffer, plus the bytes of a line not yet complete (at most `max.line.bytes`).
 *
 * Following, it checks a file at its end every `poll.interval.ms` (no I/O in between): new
 * data is read; a file shorter than the position (truncated) is read again from 0; a path
 * that now names another file (replaced, e.g. rotated) has its old file read to the end first,
 * then the new one from 0; a missing path is waited for. Each of these is logged. Not
 * following, the file is read to its end once and a last line without a newline is emitted
 * as it is.
 */
export class TrackedFile {
  private handle: FileHandle | undefined;
  private inode = 0;
  private device = 0;
  /** Byte position after the last line emitted: the offset. */
  private position = 0;
  /** Byte position of the next read: `position` plus the bytes of the incomplete line. */
  private readPosition = 0;
  private partial: Buffer[] = [];
  private partialBytes = 0;
  /** Virtual time before which a file at its end (or missing) is not looked at again. */
  private idleUntil = 0;
  private done = false;
  private reportedMissing = false;
  /**
   * Set once the path names another file while the old one is still open: where the old one was
   * read up to at the last check, and since when it has not grown. A writer may keep writing to
   * the old file until it reopens the path (logrotate's `create` with a postrotate reload).
   */
  private draining: { readPosition: number; quietSince: number } | undefined;
  /**
   * The file the path named when the replacement was first seen, opened then: read once the old
   * one is quiet, even if the path names yet another file by then (it is replaced in its turn).
   */
  private next: { handle: FileHandle; stats: { ino: number; dev: number; size: number } } | undefined;
  /** Where the next open starts: the committed position until the file was first opened, then 0. */
  private openAt: FilePosition = START;
  /** The first bytes of the file as read (`headBytes` of them, at most {@link FINGERPRINT_BYTES}). */
  private readonly head = Buffer.alloc(FINGERPRINT_BYTES);
  private headBytes = 0;
  /** The fingerprint of the last line emitted, kept while lines are past the first bytes. */
  private fingerprint: Fingerprint = EMPTY_FINGERPRINT;

  constructor(
    readonly filename: string,
    private readonly options: TrackedFileOptions,
  ) {
    if (options.buffer.length < FINGERPRINT_BYTES) {
      throw new RangeError(
        `TrackedFile: the read buffer is ${options.buffer.length} bytes; it must hold at least ${FINGERPRINT_BYTES}`,
      );
    }
  }

  /**
   * Bytes of the file not yet read into lines (its size now less the position after the last
   * line emitted); 0 while the file is missing. For the task's source lag.
   */
  async unreadBytes(): Promise<number> {
    const size = await stat(this.filename).then(
      (s) => s.size,
      () => this.position,
    );
    return Math.max(0, size - this.position);
  }

  /**
   * Opens the file at `committed` (byte 0 when nothing was committed). A file shorter than the
   * committed position was truncated while the task was down, and one whose first bytes do not
   * match the committed fingerprint is another file (replaced, or truncated and rewritten): each
   * is read from 0, with a warning. A position without a fingerprint is taken as it is.
   * A missing file is waited for when following and an error otherwise.
   */
  async open(committed: FilePosition | undefined): Promise<void> {
    this.openAt = committed ?? START;
    await this.tryOpen();
  }

  /**
   * Hands complete lines to `out` until the budget is spent or the file is at its end.
   * Between checks of a file at its end it does no I/O.
   */
  async readInto(out: LineSink, budget: ReadBudget): Promise<void> {
    if (this.done || this.options.clock.now() < this.idleUntil) return;
    if (!this.handle && !(await this.tryOpen())) {
      this.idleUntil = this.options.clock.now() + this.options.pollIntervalMs;
      return;
    }
    // Before reading on, every round (a round that ended on its budget too: under back-pressure
    // the next one can come seconds later): what follows the position in a file truncated and
    // refilled meanwhile is not the next line.
    // readPosition, not position: a first line still without its newline was read too.
    if (this.readPosition > 0 && this.rewritten()) this.restart();
    if (await this.readLines(out, budget)) return;
    // At the end of the file.
    if (!this.options.follow) {
      this.emitPartial(out);
      this.done = true;
      this.release();
      this.options.logger.info(
        { event: 'file.done', file: this.filename, position: this.position },
        `read ${this.filename} to its end`,
      );
      return;
    }
    if (await this.checkIdentity(out, budget)) return;
    this.idleUntil = this.options.clock.now() + this.options.pollIntervalMs;
  }

  /** Closes the file for good (the task stops). */
  async close(): Promise<void> {
    const handle = this.handle;
    const next = this.next;
    this.handle = undefined;
    this.next = undefined;
    this.done = true;
    await handle?.close();
    await next?.handle.close();
  }

  private async tryOpen(): Promise<boolean> {
    const opened = await this.openPath();
    if (opened === undefined) return false;
    await this.adopt(opened.handle, opened.stats);
    return true;
  }

  /** Opens the file the path names now, with its stat; undefined (logged once) while there is none. */
  private async openPath(): Promise<{ handle: FileHandle; stats: { ino: number; dev: number; size: number } } | undefined> {
    let handle: FileHandle;
    try {
      handle = await open(this.filename, 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      if (!this.options.follow) {
        throw new Error(`File ${this.filename} does not exist; with follow=false every file must exist when the task starts`, {
          cause: e,
        });
      }
      if (!this.reportedMissing) {
        this.reportedMissing = true;
        this.options.logger.warn(
          { event: 'file.missing', file: this.filename },
          `file ${this.filename} does not exist; waiting for it (checked every ${this.options.pollIntervalMs} ms)`,
        );
      }
      return undefined;
    }
    const stats = await handle.stat().catch(async (e: unknown) => {
      await handle.close();
      throw e;
    });
    return { handle, stats };
  }

  /** Reads `handle` from here on: from the committed position when it is that file, else from 0. */
  private async adopt(handle: FileHandle, stats: { ino: number; dev: number; size: number }): Promise<void> {
    const from = this.openAt;
    let position = from.position;
    try {
      if (from.fingerprint === undefined && position > 0 && position <= stats.size) {
        // No fingerprint: Kafka Connect's offset (or one of ours from before it), whose position
        // counts UTF-16 code units, not bytes, once the file has multi-byte characters.
        const { byte, reading } = await bytePositionOfConnectOffset(handle, position, this.options.buffer);
        if (byte !== position) {
          this.options.logger.info(
            { event: 'file.position.converted', file: this.filename, position, byte, reading },
            `the committed position ${position} of ${this.filename} has no fingerprint (Kafka Connect's FileStreamSource offset): ${reading === 'utf16' ? 'read as the UTF-16 code units of the UTF-8 text, as Connect counts them' : 'it ends no line either as UTF-16 code units or as bytes (Connect resumed inside multi-byte text once), so it resumes at the end of the line it falls in'}, byte ${byte}`,
          );
        }
        position = byte;
      }
      if (stats.size < position) {
        this.options.logger.warn(
          { event: 'file.truncated', file: this.filename, size: stats.size, position },
          `file ${this.filename} is ${stats.size} bytes, shorter than the committed position ${position}: it was truncated, reading it again from the start`,
        );
        position = 0;
      } else if (position > 0 && from.fingerprint !== undefined && !(await this.matches(handle, from.fingerprint))) {
        this.options.logger.warn(
          { event: 'file.replaced', file: this.filename, position, fingerprint: from.fingerprint.text },
          `file ${this.filename} is not the file the committed position ${position} was read from (its first ${from.fingerprint.bytes} bytes differ): it was replaced or rewritten while the task was not running; reading it from the start`,
        );
        position = 0;
      }
      await this.readHead(handle, position);
    } catch (e) {
      await handle.close();
      throw e;
    }
    this.handle = handle;
    this.openAt = START;
    this.inode = stats.ino;
    this.device = stats.dev;
    this.position = position;
    this.readPosition = position;
    this.dropPartial();
    this.reportedMissing = false;
    this.options.logger.info(
      { event: 'file.opened', file: this.filename, position },
      `reading ${this.filename} from byte ${position}`,
    );
  }

  /** Reads lines until the budget is spent (returns true) or the end of the file (returns false). */
  private async readLines(out: LineSink, budget: ReadBudget): Promise<boolean> {
    const handle = this.handle as FileHandle;
    const { buffer } = this.options;
    while (budget.lines > 0 && budget.bytes > 0) {
      const chunkStart = this.readPosition;
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, chunkStart);
      if (bytesRead === 0) return false;
      const chunk = buffer.subarray(0, bytesRead);
      if (chunkStart < FINGERPRINT_BYTES) this.keepHead(chunk, chunkStart);
      let from = 0;
      for (;;) {
        const newline = chunk.indexOf(NEWLINE, from);
        if (newline === -1) {
          this.keepPartial(chunk.subarray(from));
          this.readPosition = chunkStart + bytesRead;
          break;
        }
        const end = chunkStart + newline + 1;
        // Decoded straight from the read buffer (no Buffer object per line) unless a partial line is waiting.
        out(
          this.partialBytes === 0
            ? this.decodeRange(chunk, from, newline)
            : this.decode(this.takeLine(chunk.subarray(from, newline))),
          end,
          this.fingerprintAt(end),
        );
        budget.lines--;
        budget.bytes -= end - this.position;
        this.position = end;
        this.readPosition = end;
        from = newline + 1;
        // The rest of the chunk is read again next round: cheaper than keeping it.
        if (budget.lines <= 0 || budget.bytes <= 0) return true;
      }
    }
    return true;
  }

  /**
   * At the end of a followed file: has it been truncated, replaced or removed? Reads what the
   * answer calls for and returns true when the budget ran out before the end.
   */
  private async checkIdentity(out: LineSink, budget: ReadBudget): Promise<boolean> {
    const handle = this.handle as FileHandle;
    let current: { ino: number; dev: number } | undefined;
    try {
      current = await stat(this.filename);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    if (current === undefined) {
      if (!this.reportedMissing) {
        this.reportedMissing = true;
        this.options.logger.warn(
          { event: 'file.missing', file: this.filename, position: this.position },
          `file ${this.filename} was removed; keeping the read file open and waiting for a new one at that path`,
        );
      }
      return false;
    }
    if (current.ino !== this.inode || current.dev !== this.device) {
      // Lines written to the old file up to its replacement belong before the new file's.
      if (await this.readLines(out, budget)) return true;
      // The old file is left only once it has not grown for a poll interval: a writer that has
      // not reopened the path yet still writes there, and what it writes after the switch
      // would be lost.
      const now = this.options.clock.now();
      this.next ??= await this.openPath();
      if (this.draining === undefined || this.draining.readPosition !== this.readPosition) {
        this.draining = { readPosition: this.readPosition, quietSince: now };
        return false;
      }
      if (now - this.draining.quietSince < this.options.pollIntervalMs) return false;
      this.draining = undefined;
      this.emitPartial(out);
      const previous = this.inode;
      const next = this.next;
      this.next = undefined;
      this.release();
      const newInode = next?.stats.ino ?? current.ino;
      this.options.logger.warn(
        { event: 'file.replaced', file: this.filename, inode: previous, newInode, position: this.position },
        `file ${this.filename} was replaced (inode ${previous} is now ${newInode}) after byte ${this.position}: reading the new file from the start`,
      );
      if (next) await this.adopt(next.handle, next.stats);
      else if (!(await this.tryOpen())) return false;
      return this.readLines(out, budget);
    }
    this.draining = undefined;
    const { size } = await handle.stat();
    if (size < this.readPosition) {
      this.options.logger.warn(
        { event: 'file.truncated', file: this.filename, size, position: this.position },
        `file ${this.filename} was truncated to ${size} bytes, below the read position ${this.readPosition}: reading it again from the start`,
      );
      this.restart();
      return this.readLines(out, budget);
    }
    return false;
  }

  /** The last line of a file that ends without a newline, when no more is coming. */
  private emitPartial(out: LineSink): void {
    if (this.partialBytes === 0) return;
    const text = this.decode(this.takeLine(Buffer.alloc(0)));
    this.position = this.readPosition;
    out(text, this.position, this.fingerprintAt(this.position));
  }

  /**
   * The fingerprint of the file read up to `position`: of its first `min(position,
   * FINGERPRINT_BYTES)` bytes, all of which are in `head` by then (they were read).
   */
  private fingerprintAt(position: number): Fingerprint {
    const bytes = Math.min(position, FINGERPRINT_BYTES);
    if (bytes !== this.fingerprint.bytes) this.fingerprint = fingerprintOf(this.head.subarray(0, bytes));
    return this.fingerprint;
  }

  /**
   * True (and logged) when the open file was truncated below the read position, or its first
   * bytes are no longer those read (truncated and written again): it is read again from 0.
   * Synchronous calls on purpose: a stat and a read of at most 1 KiB from the page cache cost a
   * few µs, where the promise API costs tens, and this runs every round.
   */
  private rewritten(): boolean {
    const fd = (this.handle as FileHandle).fd;
    const { size } = fstatSync(fd);
    if (size < this.readPosition) {
      this.options.logger.warn(
        { event: 'file.truncated', file: this.filename, size, position: this.position },
        `file ${this.filename} was truncated to ${size} bytes, below the read position ${this.readPosition}: reading it again from the start`,
      );
      return true;
    }
    // The first bytes kept that were read as lines (or as the partial line): bytes read ahead of
    // the read position may have changed since without changing what was read, and are read again.
    const length = Math.min(this.headBytes, this.readPosition);
    if (length === 0) return false;
    const { buffer } = this.options;
    const bytesRead = readSync(fd, buffer, 0, length, 0);
    if (bytesRead === length && buffer.compare(this.head, 0, length, 0, length) === 0) {
      this.headBytes = length;
      return false;
    }
    // Only the unfinished last line differs (the lines written are as read): it is read again from
    // the last whole line, not the whole file (which would write those lines twice).
    const written = Math.min(length, this.position);
    if (this.position < this.readPosition && bytesRead >= written && buffer.compare(this.head, 0, written, 0, written) === 0) {
      this.options.logger.warn(
        { event: 'file.truncated', file: this.filename, position: this.position },
        `file ${this.filename} was rewritten after byte ${this.position}: its unfinished last line is read again from there`,
      );
      this.readPosition = this.position;
      this.dropPartial();
      this.headBytes = written;
      return false;
    }
    this.options.logger.warn(
      { event: 'file.truncated', file: this.filename, position: this.position },
      `file ${this.filename} was rewritten: its first ${length} bytes are no longer those read (truncated and written again between two checks); reading it again from the start`,
    );
    return true;
  }

  /** Reads the open file again from byte 0. */
  private restart(): void {
    this.position = 0;
    this.readPosition = 0;
    this.dropPartial();
    this.dropHead();
  }

  /** Keeps the bytes of a chunk read at `start` that fall in the file's first {@link FINGERPRINT_BYTES}. */
  private keepHead(chunk: Buffer, start: number): void {
    // Reads go forward from the position, so a chunk starts within (or right after) what is kept.
    // Bytes already kept are never overwritten: they are what the fingerprint and the rewrite
    // check compare against.
    const from = Math.max(start, this.headBytes);
    const end = Math.min(start + chunk.length, FINGERPRINT_BYTES);
    if (start > this.headBytes || from >= end) return;
    chunk.copy(this.head, from, from - start, end - start);
    this.headBytes = end;
  }

  /** Reads the first bytes of the file, up to `position`, so the fingerprints of later lines can be taken. */
  private async readHead(handle: FileHandle, position: number): Promise<void> {
    this.dropHead();
    const want = Math.min(position, FINGERPRINT_BYTES);
    if (want === 0) return;
    const { bytesRead } = await handle.read(this.head, 0, want, 0);
    this.headBytes = bytesRead;
  }

  private dropHead(): void {
    this.headBytes = 0;
    this.fingerprint = EMPTY_FINGERPRINT;
  }

  /** True when the file's first `fingerprint.bytes` bytes hash to `fingerprint.sha256`. */
  private async matches(handle: FileHandle, fingerprint: Fingerprint): Promise<boolean> {
    const hash = createHash('sha256');
    const { buffer } = this.options;
    let at = 0;
    while (at < fingerprint.bytes) {
      const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, fingerprint.bytes - at), at);
      if (bytesRead === 0) return false;
      hash.update(buffer.subarray(0, bytesRead));
      at += bytesRead;
    }
    return hash.digest('hex') === fingerprint.sha256;
  }

  /**
   * Closes the current file without waiting: nothing depends on the close, and a poll round
   * should not wait for it.
   */
  private release(): void {
    const handle = this.handle;
    this.handle = undefined;
    handle?.close().catch((err: unknown) => {
      this.options.logger.warn({ event: 'file.close.failed', file: this.filename, err }, `closing ${this.filename} failed`);
    });
  }

  private keepPartial(bytes: Buffer): void {
    if (bytes.length === 0) return;
    this.checkLength(this.partialBytes + bytes.length);
    // Copy: the read buffer is reused by the next read.
    this.partial.push(Buffer.from(bytes));
    this.partialBytes += bytes.length;
  }

  private takeLine(tail: Buffer): Buffer {
    this.checkLength(this.partialBytes + tail.length);
    if (this.partialBytes === 0) return tail;
    const line = Buffer.concat([...this.partial, tail]);
    this.dropPartial();
    return line;
  }

  private dropPartial(): void {
    this.partial = [];
    this.partialBytes = 0;
  }

  private checkLength(bytes: number): void {
    if (bytes > this.options.maxLineBytes) {
      throw new Error(
        `The line at byte ${this.position} of ${this.filename} is longer than max.line.bytes (${this.options.maxLineBytes}): raise max.line.bytes to read it`,
      );
    }
  }

  private decode(line: Buffer): string {
    return this.decodeRange(line, 0, line.length);
  }

  /** The text of `buffer[start, end)`, less a trailing carriage return; checks `max.line.bytes`. */
  private decodeRange(buffer: Buffer, start: number, end: number): string {
    this.checkLength(end - start);
    const last = end > start && buffer[end - 1] === CARRIAGE_RETURN ? end - 1 : end;
    return buffer.toString(this.options.encoding, start, last);
  }
}
