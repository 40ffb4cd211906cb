import { Command } from 'commander';
import { describeFailure, runStandalone } from './standalone.js';

const program = new Command();
program.name('tributary').description('Run Kafka source connectors written with Tributary.').version('0.1.0');

program
  .command('standalone')
  .description('Run connectors in one process. Without bootstrap.servers, records go to stdout as JSON lines.')
  .argument('<worker-config>', 'worker config (.properties or .json)')
  .argument('<connector-configs...>', 'one or more connector configs (.properties or .json)')
  .action(async (workerConfig: string, connectorConfigs: string[]) => {
    let worker: Awaited<ReturnType<typeof runStandalone>> | undefined;
    let stopping = false;
    const stopWorker = (running: NonNullable<typeof worker>) =>
      running.stop().then(
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
      // A signal while the worker starts stops it gracefully once started.
      if (worker) void stopWorker(worker);
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
    try {
      worker = await runStandalone({ workerConfigPath: workerConfig, connectorConfigPaths: connectorConfigs });
    } catch (e) {
      process.stderr.write(`tributary: ${describeFailure(e)}\n`);
      process.exit(1);
    }
    if (stopping) void stopWorker(worker);
  });

program.parseAsync(process.argv).catch((e: unknown) => {
  process.stderr.write(`tributary: ${describeFailure(e)}\n`);
  process.exit(1);
});
