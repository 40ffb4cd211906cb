/**
 * The raw librdkafka producer (bench/contenders/librdkafka-raw-producer.ts, built): the same
 * lines through `@confluentinc/kafka-javascript`'s producer with the librdkafka settings of
 * Tributary's `sender=librdkafka`, with nothing else: the ceiling of that sender.
 */

import { DEFAULT_MAX_IN_FLIGHT_RECORDS } from '../../src/runtime/task-settings.js';
import type { BenchSettings } from '../lib/settings.js';
import type { Contender, Launch, RunContext } from './contender.js';
import { tributaryWorkerProperties } from './tributary.js';

/**
 * `BENCH_RAW_OPAQUE=1`: every record carries an opaque (its number), as the sender's records do,
 * to measure what that costs (docs/benchmarks.md, third pass). Any other value than 1, 0 or unset
 * is refused, so that a typo never measures the other variant unnoticed.
 */
function withOpaque(): boolean {
  const value = process.env.BENCH_RAW_OPAQUE;
  if (value === undefined || value === '' || value === '0') return false;
  if (value === '1') return true;
  throw new Error(`BENCH_RAW_OPAQUE must be 1 (an opaque per record) or 0 / unset (none), got '${value}'`);
}

/**
 * `BENCH_RAW_UNBOUNDED=1`: no bound on the records handed over and not yet reported but
 * librdkafka's own queue (the contender before 2026-12-03). By default the loop keeps at most
 * Tributary's default `task.max.in.flight.records` waiting for their reports, as the sender does:
 * unbounded, it queues most of the file, librdkafka's threads write it while the main thread is
 * still handing lines over, and the main thread takes the delivery reports after the records are
 * in the topic, outside the steady window (docs/benchmarks.md, fourteenth pass). Refused unless
 * 1, 0 or unset.
 */
function unbounded(): boolean {
  const value = process.env.BENCH_RAW_UNBOUNDED;
  if (value === undefined || value === '' || value === '0') return false;
  if (value === '1') return true;
  throw new Error(`BENCH_RAW_UNBOUNDED must be 1 (librdkafka's queue only) or 0 / unset (bounded), got '${value}'`);
}

export function librdkafkaRaw(settings: BenchSettings, script: string, nodeOptions: readonly string[] = []): Contender {
  const p = settings.producer;
  const opaque = withOpaque();
  const maxInFlight = unbounded() ? 0 : DEFAULT_MAX_IN_FLIGHT_RECORDS;
  return {
    id: 'librdkafka-raw',
    label: `raw librdkafka${opaque ? ', opaque per record' : ''}${maxInFlight === 0 ? ', unbounded queue' : ''}`,
    sendsLines: true,
    settings: [
      `@confluentinc/kafka-javascript Producer.produce() per line of the file (64 KiB reads, lines as Buffer slices, null key${opaque ? ', an opaque per record as the sender passes (BENCH_RAW_OPAQUE=1)' : ''}), one delivery report each, polled every 5 ms`,
      maxInFlight === 0
        ? "no bound on the records waiting for their delivery reports but librdkafka's queue (BENCH_RAW_UNBOUNDED=1): the loop queues most of the file and takes the reports after the steady window"
        : `no new 64 KiB read while ${maxInFlight.toLocaleString('en-US')} records are handed over and not yet reported (Tributary's default task.max.in.flight.records, which its runner checks per poll round), so that it takes its delivery reports while it writes`,
      `librdkafka settings = those of Tributary's sender=librdkafka for the same producer.* (librdkafkaConfig in src/kafka/librdkafka-sender.ts): acks=all, ` +
        `max.in.flight=${p.maxInFlight}, enable.idempotence=${p.idempotence}, linger.ms=${p.lingerMs}, compression none, batch.size=${p.tributaryBatchBytes}`,
      `Node ${process.version}${nodeOptions.length > 0 ? ` ${nodeOptions.join(' ')}` : ''}`,
    ],
    async launch(run: RunContext): Promise<Launch> {
      const producerProps = Object.entries(tributaryWorkerProperties(settings, run, ''))
        .filter(([k]) => k.startsWith('producer.'))
        .map(([k, v]) => `--set=${k}=${v}`);
      return {
        command: process.execPath,
        args: [
          ...nodeOptions,
          script,
          `--bootstrap=${run.bootstrap}`,
          `--topic=${run.topic}`,
          `--file=${run.inputFile}`,
          `--max-in-flight=${maxInFlight}`,
          ...producerProps,
          ...(opaque ? ['--opaque'] : []),
        ],
        kind: 'oneshot',
      };
    },
  };
}
