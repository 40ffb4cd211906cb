/**
 * A stand-in for src/kafka/kafkajs-producer-thread.ts, for tests of the main thread's side
 * without Kafka. Its behaviour comes from TRIBUTARY_FAKE_THREAD (the thread's copy of the
 * environment, taken when it starts):
 * - `connect-fails`: answers `connect` with a kafkajs-named failure; never answers `disconnect`;
 * - `dies-once:<file>`: connects; at the first `send` of the first thread (no <file> yet) it
 *   creates <file> and exits with code 3; a later thread answers every `send` as written to
 *   partition 0 at offset 0 and `disconnect` as done.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';

const mode = process.env.TRIBUTARY_FAKE_THREAD ?? '';
const marker = mode.startsWith('dies-once:') ? mode.slice('dies-once:'.length) : undefined;
const dies = marker !== undefined && !existsSync(marker);

parentPort?.on('message', (m: { op: string; id?: number }) => {
  if (m.op === 'connect') {
    if (mode === 'connect-fails') {
      setTimeout(() => {
        parentPort?.postMessage({
          op: 'connect-failed',
          error: {
            name: 'KafkaJSConnectionError',
            message: 'Connection error: connect ECONNREFUSED',
            stack: undefined,
            fields: {},
            cause: undefined,
          },
        });
      }, 50);
    } else {
      parentPort?.postMessage({ op: 'connected' });
    }
  }
  if (m.op === 'send') {
    if (dies && marker !== undefined) {
      writeFileSync(marker, '');
      process.exit(3);
    }
    parentPort?.postMessage({
      op: 'sent',
      id: m.id,
      result: [{ topicName: 't', partition: 0, errorCode: 0, baseOffset: '0', logAppendTime: '-1', logStartOffset: '0' }],
      partitions: new Int32Array([0]),
      halted: false,
    });
  }
  if (m.op === 'disconnect' && mode !== 'connect-fails') parentPort?.postMessage({ op: 'disconnected' });
});
