import { Command } from 'commander';
import { describeFailure, runStandalone, type StandaloneWorker } from './standalone.js';

const program = new Command();
program.name('tributary').description('Run Kafka source connectors written with Tributary.').version('0.1.0');

program
  .command('standalone')
  .description('Run connectors in one process. Without bootstrap.servers, records go to stdout as JSON lines.')
  .argument('<worker-config>', 'worker config (.properties or .json)')
  .argument('<connector-configs...>', 'one or more connector configs (.properties or .json)')
  .action(async (workerConfig: string, connectorConfigs: string[]) => {
    // Signals are handled from the first moment: one during start-up (REST listening, the
    // first connectors streaming) stops gracefully too, instead of Node's default exit 143.
    const startup = new AbortController();
    let worker: StandaloneWorker | undefined;
    let stopping = false;
    const finish = (stopped: Promise<void>) =>
      stopped.then(
        () => process.exit(0),
        (e: unknown) => {
          process.stderr.write(`tributary: stop failed: ${describeFailure(e)}\n`);
          process.exit(1);
        },
      );
    const stop = (signal: string) => {
      if (stopping) {
        process.stderr.write(`tributary: ${signal} again, exiting without waiting\n`);
        process.exit(130);
      }
      stopping = true;
      // While starting, runStandalone sees the abort and stops the worker before it resolves.
      if (worker) void finish(worker.stop());
      else startup.abort();
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
    try {
      worker = await runStandalone({
        workerConfigPath: workerConfig,
        connectorConfigPaths: connectorConfigs,
        signal: startup.signal,
        processGuards: true,
      });
    } catch (e) {
      process.stderr.write(`tributary: ${describeFailure(e)}\n`);
      process.exit(1);
    }
    // Stopped during start-up: worker.stop() returns the stop already done.
    if (startup.signal.aborted) void finish(worker.stop());
  });

program.parseAsync(process.argv).catch((e: unknown) => {
  process.stderr.write(`tributary: ${describeFailure(e)}\n`);
  process.exit(1);
});
