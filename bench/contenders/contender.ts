/**
 * What the harness needs from each side it measures: how to start it for one run, whether it
 * stops by itself, and how to read what it committed.
 */
import { readFile } from 'node:fs/promises';

/** The sides compared (Kafka Connect twice: with its default heap and with a smaller -Xmx). */
export type ContenderId =
  | 'connect'
  | 'connect-xmx'
  | 'connect-eos'
  | 'tributary'
  | 'tributary-librdkafka'
  | 'tributary-eos'
  | 'tributary-librdkafka-eos'
  | 'kafkajs'
  | 'kafkajs-published'
  | 'librdkafka-raw'
  | 'perf'
  | 'synthetic';

/** Table order. */
export const CONTENDER_ORDER: readonly ContenderId[] = [
  'connect',
  'connect-xmx',
  'connect-eos',
  'tributary',
  'tributary-librdkafka',
  'tributary-eos',
  'tributary-librdkafka-eos',
  'kafkajs',
  'kafkajs-published',
  'librdkafka-raw',
  'perf',
  'synthetic',
];

/** Everything one run of one contender is given. */
export interface RunContext {
  readonly bootstrap: string;
  /** A topic created for this run only (`partitions` partitions), deleted after it. */
  readonly topic: string;
  readonly partitions: number;
  /** Connectors (one task each) that read the input file side by side; 1 but in the tasks series. */
  readonly copies: number;
  readonly inputFile: string;
  readonly records: number;
  readonly lineBytes: number;
  /** An empty directory for this run's config files, offsets and log. */
  readonly dir: string;
  /** A free TCP port on 127.0.0.1 for a REST listener. */
  readonly restPort: number;
}

/** How to start one run. */
export interface Launch {
  readonly command: string;
  readonly args: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  /**
   * `worker`: runs until stopped; the harness sends SIGTERM once every record is in the topic,
   * and the worker's graceful stop does the final offset commit before it exits.
   * `oneshot`: exits by itself once everything is acknowledged.
   */
  readonly kind: 'worker' | 'oneshot';
  /** After exit: the source offset (byte position) committed for the input file (summed over `copies`), if the contender commits any. */
  readonly committedPosition?: () => Promise<number | undefined>;
  /**
   * While running: one read of the committed position, no settling re-read (transactional
   * contenders: the harness waits for it to reach the end of the input before the stop).
   */
  readonly committedPositionNow?: () => Promise<number | undefined>;
  /** After exit: the records the committed offsets cover (the synthetic source: the sum of its sequence numbers). */
  readonly committedRecords?: () => Promise<number | undefined>;
}

/** One side of the comparison. */
export interface Contender {
  readonly id: ContenderId;
  /** Its name in tables. */
  readonly label: string;
  /** Lines for the settings list written beside the table. */
  readonly settings: readonly string[];
  /** True when it writes the input file's lines (so `--verify` compares values); false for synthetic payloads. */
  readonly sendsLines: boolean;
  /**
   * True when it writes in Kafka transactions: the topic's end offsets then count one commit
   * marker per transaction as well, so the harness takes "at least every record" as done and
   * always reads the topic back (read_committed) to check that it holds every line exactly once.
   */
  readonly transactional?: boolean;
  launch(run: RunContext): Promise<Launch>;
}

/**
 * The last `"position":N` in an offsets file: Tributary's JSON file, or Kafka Connect's
 * standalone file (a Java-serialized map whose keys and values are the JSON bytes, so the
 * offset `{"position":N}` appears there verbatim). Undefined when the file or the key is missing.
 */
export async function lastPosition(file: string): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'latin1');
  } catch {
    return undefined;
  }
  let last: number | undefined;
  for (const m of text.matchAll(/"position"\s*:\s*(\d+)/g)) last = Number(m[1]);
  return last;
}

/**
 * The sum of every `"<key>":N` in an offsets file (each source partition appears once in both
 * workers' files, which are rewritten whole at every flush). Undefined when the file is missing
 * or holds none.
 */
export async function sumOfOffsets(file: string, key = 'position'): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'latin1');
  } catch {
    return undefined;
  }
  let sum: number | undefined;
  for (const m of text.matchAll(new RegExp(`"${key}"\\s*:\\s*(\\d+)`, 'g'))) sum = (sum ?? 0) + Number(m[1]);
  return sum;
}

/** Writes a `.properties` file body from entries (no escaping needed for the values used here). */
export function properties(entries: Readonly<Record<string, string | number | boolean>>): string {
  return `${Object.entries(entries)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n')}\n`;
}
