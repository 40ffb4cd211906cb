import type { Logger } from '../api/logger.js';
import { isKafkajsError } from '../kafka/kafkajs-errors.js';

/**
 * Keeps an error that escaped one connector's code from ending the worker process and every
 * other connector with it: a promise rejected with no handler, or an exception thrown from a
 * callback (a timer, an event emitter's 'error' with no listener) outside any task's
 * pipeline. Each is logged at error level with its stack (`process.unhandledRejection`,
 * `process.uncaughtException`), never swallowed; the worker goes on. Errors in a task's
 * records, sender or offset store never come here: the runtime fails that task with them.
 *
 * kafkajs rejections are left to `installKafkajsRejectionGuard`, which logs them itself.
 * Only the `tributary` command installs this: it owns its process, a library caller does not.
 *
 * @returns A function that removes the guards; calling it twice is harmless.
 *
 * @example
 * ```ts
 * import type { Logger } from 'tributary-connect';
 * import type { Worker } from 'tributary-connect/runtime';
 *
 * declare const worker: Worker;
 * declare const logger: Logger;
 * const uninstall = installProcessGuards(logger);
 * process.once('SIGTERM', () => void worker.stop().finally(uninstall));
 * ```
 */
export function installProcessGuards(logger: Logger): () => void {
  const onRejection = (reason: unknown): void => {
    if (isKafkajsError(reason)) return;
    logger.error(
      { event: 'process.unhandledRejection', err: reason },
      `a promise rejected and nothing handled it; the worker keeps running: ${describe(reason)}`,
    );
  };
  const onException = (error: unknown): void => {
    logger.error(
      { event: 'process.uncaughtException', err: error },
      `an exception escaped a callback; the worker keeps running: ${describe(error)}`,
    );
  };
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  let installed = true;
  return () => {
    if (!installed) return;
    installed = false;
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
  };
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
