import { isKafkajsError } from './kafkajs-errors.js';

/**
 * Keeps a kafkajs promise that nobody handles from crashing the worker.
 *
 * kafkajs can reject promises that no caller holds: after a broker restart a retried Produce
 * request's `KafkaJSRequestTimeoutError`/`KafkaJSNumberOfRetriesExceeded` has surfaced as an
 * unhandled rejection (tulios/kafkajs#1686), and `disconnect()` does not wait for requests still
 * being retried (#879), whose failures then arrive after their caller has gone. Node's default
 * (`--unhandled-rejections=throw`) turns such a rejection into a process crash.
 *
 * The guard listens to `process`'s `unhandledRejection` event and hands every rejection whose
 * reason is a kafkajs error (`name` starting with `KafkaJS`) to `onError`. Any other reason is
 * left alone: when no other listener is installed and Node runs in its default `throw` or
 * `strict` mode it is re-thrown, so the process still crashes as it would without the guard
 * (adding a listener otherwise disables Node's default for every rejection).
 *
 * The worker installs it once at start-up, before it creates any kafkajs client, and calls the
 * returned function at shutdown; `KafkajsSender` does not install it itself, since it is
 * process-wide. The sender attaches a handler to every promise it gets from kafkajs, so a
 * rejection reaching the guard means kafkajs lost track of one of its own.
 *
 * @param onError Receives each kafkajs rejection no one handled, e.g. to log it or to raise a
 *   worker-level event. It must not throw.
 * @returns A function that removes the guard; calling it twice is harmless.
 *
 * @example
 * ```ts
 * import type { Logger } from 'tributary-connect';
 * import type { Worker } from 'tributary-connect/runtime';
 *
 * declare const log: Logger;
 * declare const worker: Worker;
 * const uninstall = installKafkajsRejectionGuard((e) => log.warn({ err: e }, 'kafkajs rejection'));
 * try { await worker.start(); } finally { uninstall(); }
 * ```
 */
export function installKafkajsRejectionGuard(onError: (error: Error) => void): () => void {
  const listener = (reason: unknown): void => {
    if (isKafkajsError(reason)) {
      onError(reason);
      return;
    }
    if (process.listenerCount('unhandledRejection') === 1 && crashesOnUnhandledRejection()) {
      // Same outcome as Node's default without a listener: an uncaught exception.
      throw reason;
    }
  };
  process.on('unhandledRejection', listener);
  let installed = true;
  return () => {
    if (!installed) return;
    installed = false;
    process.off('unhandledRejection', listener);
  };
}

/** Whether Node's `--unhandled-rejections` mode (from argv or NODE_OPTIONS) crashes the process. */
function crashesOnUnhandledRejection(): boolean {
  const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  for (const flag of flags) {
    const m = /^--unhandled-rejections=(.+)$/.exec(flag);
    if (m !== null) return m[1] === 'throw' || m[1] === 'strict';
  }
  return true;
}
