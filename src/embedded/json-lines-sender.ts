import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import type { OutgoingRecord, RecordMetadata, RecordSender, SendCallback } from '../runtime/ports.js';
import { ensureFolderSync } from '../storage/ensure-folder.js';

/** Where the embedded sink writes: a stream (stdout) or a folder with one `<topic>.jsonl` file per topic. */
export type JsonLinesTarget = { readonly stream: Writable } | { readonly directory: string };

/**
 * The embedded default "Kafka": writes each record as one JSON line and acknowledges it once
 * the write has been handed to the operating system. Used when the worker has no
 * `bootstrap.servers`, so a connector runs with no infrastructure at all.
 *
 * A line is `{"topic","partition","offset","timestamp","key","value","headers"}` (plus
 * `"heartbeat":true` on heartbeat records); JSON keys and values are embedded as JSON, other
 * text as a string, other bytes as `{"base64": "..."}`. Offsets count from 0 per process.
 */
export class JsonLinesSender implements RecordSender {
  private readonly offsets = new Map<string, number>();
  private readonly streams = new Map<string, Writable>();
  private pending: Array<{ line: string; stream: Writable; onDone: SendCallback; metadata: RecordMetadata }> = [];
  private scheduled = false;
  private outstanding = 0;
  private idle: Array<() => void> = [];

  constructor(
    private readonly target: JsonLinesTarget,
    private readonly now: () => number = Date.now,
  ) {
    // Not mkdirSync(recursive): on Node 20 it never returns for some paths (see ensureFolder).
    if ('directory' in target) ensureFolderSync(target.directory);
    // A write error (EPIPE on stdout, a full disk) reaches each record's callback, failing its
    // task; without a listener the stream's 'error' event would end the whole process.
    else target.stream.on('error', ignoreStreamError);
  }

  send(record: OutgoingRecord, onDone: SendCallback): void {
    const partition = record.partition ?? 0;
    const key = `${record.topic}\u0000${partition}`;
    const offset = this.offsets.get(key) ?? 0;
    this.offsets.set(key, offset + 1);
    const timestamp = record.timestamp ?? this.now();
    const line = JSON.stringify({
      topic: record.topic,
      partition,
      offset,
      timestamp,
      ...(record.heartbeat ? { heartbeat: true } : {}),
      key: decode(record.key),
      value: decode(record.value),
      ...(record.headers && Object.keys(record.headers).length > 0 ? { headers: decodeHeaders(record.headers) } : {}),
    });
    this.outstanding++;
    this.pending.push({
      line,
      stream: this.streamFor(record.topic),
      onDone,
      metadata: { topic: record.topic, partition, offset, timestamp },
    });
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.writePending());
    }
  }

  async flush(): Promise<void> {
    if (this.outstanding === 0) return;
    await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  async close(): Promise<void> {
    await this.flush();
    await Promise.all(
      [...this.streams.values()].map((s) => new Promise<void>((resolve) => (s as WriteStream).end(() => resolve()))),
    );
    this.streams.clear();
    if ('stream' in this.target) this.target.stream.off('error', ignoreStreamError);
  }

  private streamFor(topic: string): Writable {
    if ('stream' in this.target) return this.target.stream;
    let stream = this.streams.get(topic);
    if (!stream) {
      const opened = createWriteStream(join(this.target.directory, `${topic.replace(/[^A-Za-z0-9._-]/g, '_')}.jsonl`), {
        flags: 'a',
      });
      // A file that cannot be opened or written (ENAMETOOLONG, EACCES, ENOSPC) fails the records
      // written to it through their callbacks; it must not end the process. The next record of
      // the topic tries a fresh stream.
      opened.on('error', () => {
        if (this.streams.get(topic) === opened) this.streams.delete(topic);
      });
      this.streams.set(topic, opened);
      stream = opened;
    }
    return stream;
  }

  private writePending(): void {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = [];
    const byStream = new Map<Writable, typeof batch>();
    for (const item of batch) {
      const list = byStream.get(item.stream);
      if (list) list.push(item);
      else byStream.set(item.stream, [item]);
    }
    for (const [stream, items] of byStream) {
      stream.write(`${items.map((i) => i.line).join('\n')}\n`, (error) => {
        let next = 0;
        const callBack = () => {
          while (next < items.length) {
            const item = items[next++] as (typeof items)[number];
            this.outstanding--;
            item.onDone(error ?? undefined, error ? undefined : item.metadata);
          }
        };
        // A callback that throws must neither escape into the stream (and the process) nor
        // keep the records after it from being called back.
        while (next < items.length) {
          try {
            callBack();
          } catch (e) {
            process.emitWarning(`a record callback of the JSON lines sender threw: ${(e as Error)?.stack ?? String(e)}`);
          }
        }
        if (this.outstanding === 0) for (const w of this.idle.splice(0)) w();
      });
    }
  }
}

function ignoreStreamError(): void {}

function decode(buf: Buffer | null): unknown {
  if (buf === null) return null;
  const text = buf.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(buf)) return { base64: buf.toString('base64') };
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function decodeHeaders(headers: Readonly<Record<string, Buffer | string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) out[k] = typeof v === 'string' ? v : v.toString('utf8');
  return out;
}
