/**
 * A stand-in for src/kafka/kafkajs-producer-thread.ts that connects, then ends its thread with
 * exit code 3 at the first `send`: how a producer thread that crashes looks to the main thread.
 */
import { parentPort } from 'node:worker_threads';

parentPort?.on('message', (message: { op: string }) => {
  if (message.op === 'connect') parentPort?.postMessage({ op: 'connected' });
  if (message.op === 'send') process.exit(3);
});
