/**
 * The raw kafkajs producer (bench/contenders/kafkajs-raw-producer.ts, built): the same lines,
 * the same batches, acks, in-flight and idempotence as Tributary's sender, with nothing else;
 * kafkajs with Tributary's fixes ('kafkajs') or as published ('kafkajs-published').
 */
import type { BenchSettings } from '../lib/settings.js';
import type { Contender, Launch, RunContext } from './contender.js';

export function kafkajsRaw(
  settings: BenchSettings,
  script: string,
  nodeOptions: readonly string[] = [],
  kafkajs: 'fixed' | 'published' = 'fixed',
): Contender {
  const p = settings.producer;
  const flags = [
    `--batch-records=${p.tributaryBatchRecords}`,
    `--batch-bytes=${p.tributaryBatchBytes}`,
    `--in-flight=${p.maxInFlight}`,
    '--acks=-1',
    `--idempotent=${p.idempotence}`,
    `--kafkajs=${kafkajs}`,
  ];
  return {
    id: kafkajs === 'fixed' ? 'kafkajs' : 'kafkajs-published',
    label: kafkajs === 'fixed' ? 'raw kafkajs' : 'raw kafkajs 2.2.4 as published',
    sendsLines: true,
    settings: [
      "kafkajs 2.2.4 producer.sendBatch in a loop over the file's lines (64 KiB reads, lines as Buffer slices, null key)",
      kafkajs === 'fixed'
        ? "kafkajs loaded as Tributary loads it, with the two producer fixes of src/kafka/kafkajs-fixes.ts: the same kafkajs work per record as Tributary's sender"
        : 'kafkajs 2.2.4 as npm has it, without the fixes: what a hand-written kafkajs loop gets',
      `batches of ${p.tributaryBatchRecords} records / ${p.tributaryBatchBytes} bytes (as Tributary's sender), ${p.maxInFlight} in flight, ` +
        `acks=-1, idempotent=${p.idempotence}, no compression; the next batch is built while one is in flight`,
      `Node ${process.version}${nodeOptions.length > 0 ? ` ${nodeOptions.join(' ')}` : ''}, default heap`,
    ],
    async launch(run: RunContext): Promise<Launch> {
      return {
        command: process.execPath,
        args: [
          ...nodeOptions,
          script,
          `--bootstrap=${run.bootstrap}`,
          `--topic=${run.topic}`,
          `--file=${run.inputFile}`,
          ...flags,
        ],
        kind: 'oneshot',
      };
    },
  };
}
