import { Command } from 'commander';
import { runDistributed } from './distributed.js';
import { describeFailure, runStandalone } from './standalone.js';

const DOCS =
  'README.md in the package (node_modules/tributary-connect/README.md); REST API and error codes: docs/rest.md, docs/errors.md of the source';

const program = new Command();
program
  .name('tributary')
  .description('Run Kafka source connectors written with Tributary, as Kafka Connect runs its connectors.')
  .version('0.1.0')
  .addHelpText(
    'after',
    `
Example:
  tributary standalone worker.properties connector.properties

  With no bootstrap.servers in worker.properties, records are written to stdout as JSON lines
  and offsets to .tributary/offsets.json, so a connector runs with no Kafka at all.

Run "tributary standalone --help" for the settings.
Docs: ${DOCS}`,
  );

program
  .command('standalone')
  .summary('run connectors in one process (as connect-standalone)')
  .description(
    "Run connectors in one process, as Kafka Connect's connect-standalone. Without bootstrap.servers, records go to stdout as JSON lines.",
  )
  .argument('<worker-config>', 'worker config (.properties or .json)')
  .argument(
    '[connector-configs...]',
    'connector configs (.properties or .json); none starts an empty worker that takes connectors over REST',
  )
  .addHelpText(
    'after',
    `
Main worker settings (worker-config):
  bootstrap.servers          Kafka brokers, host:port[,...]; unset: the embedded sink (JSON lines, no Kafka)
  embedded.output            without Kafka: stdout (default) or a directory, one <topic>.jsonl per topic
  offset.storage.file.filename  offsets file (default .tributary/offsets.json without Kafka)
  offset.storage.topic       offsets topic with Kafka (default connect-offsets)
  offset.flush.interval.ms   how often offsets are committed (default 60000)
  listeners                  REST API address (default http://127.0.0.1:8083; empty turns it off)
  log.level                  trace, debug, info (default), warn, error, fatal or silent
  log.format                 pretty (default on a terminal) or json (default otherwise)

Main connector settings (connector-configs):
  name, connector.class      unique name; the connector module, e.g. ./dist/index.js#MyConnector
  tasks.max                  the most tasks (default 1)
  heartbeat.interval.ms      heartbeat records every N ms (default 0: off)

Examples:
  tributary standalone worker.properties connector.properties
  tributary standalone worker.properties                    # empty worker; then:
  curl -X POST -H 'Content-Type: application/json' --data @connector.json http://127.0.0.1:8083/connectors

A connector.class that is a .ts file needs a TypeScript loader: build it first (npm run build),
or run the CLI through tsx (npx tsx node_modules/tributary-connect/dist/cli/main.js standalone ...).

Docs: ${DOCS}`,
  )
  .action((workerConfig: string, connectorConfigs: string[]) =>
    runUntilSignalled(
      (signal) =>
        runStandalone({
          workerConfigPath: workerConfig,
          connectorConfigPaths: connectorConfigs ?? [],
          signal,
          processGuards: true,
        }),
      STANDALONE_STARTUP_STOP_BOUND_MS,
    ),
  );

program
  .command('distributed')
  .summary('run a worker of a cluster coordinated through Kafka (as connect-distributed)')
  .description(
    "Run one worker of a cluster, as Kafka Connect's connect-distributed: the workers of one group.id share the cluster's connectors, kept in Kafka topics; Kafka's group coordinator decides who runs what.",
  )
  .argument('<worker-config>', 'worker config (.properties or .json)')
  .addHelpText(
    'after',
    `
Settings (worker-config), as Kafka Connect's distributed worker names them:
  bootstrap.servers                  Kafka brokers, host:port[,...] (required)
  group.id                           the cluster's group (required)
  config.storage.topic               connector and task configs, target states (required)
  offset.storage.topic               source offsets (required)
  status.storage.topic               connector and task statuses (required)
  listeners                          REST API address (default http://127.0.0.1:8083)
  rest.advertised.host.name/.port    how the other workers reach this one
  session.timeout.ms                 a silent worker is dropped after this (default 10000)
  heartbeat.interval.ms              group heartbeat (default 3000)
  scheduled.rebalance.max.delay.ms   work of a worker that left is held this long (default 30000)

Example (three workers on one machine: docs/distributed.md of the source, examples/cluster/):
  tributary distributed worker-1.properties

Docs: ${DOCS}`,
  )
  .action((workerConfig: string) =>
    runUntilSignalled((signal) => runDistributed({ workerConfigPath: workerConfig, processGuards: true, signal })),
  );

/** A repeated signal this soon after the first is the same stop request, not an impatient second one. */
const SAME_STOP_WINDOW_MS = 1000;

/**
 * How long a standalone start-up stopped by a signal may take to end (the step under way, then
 * the worker's graceful stop) before the process exits 1 without waiting: a step that never ends
 * (a connector whose start() never resolves) must not keep a stopped process alive. Not for
 * `distributed`: a group join under way must be finished first (the member gets its id with the
 * join's answer, and must leave with it), and the coordinator bounds that by its own timeouts.
 */
const STANDALONE_STARTUP_STOP_BOUND_MS = 10_000;

/**
 * Starts a worker and runs it until SIGINT or SIGTERM, which are handled from the first moment:
 * one during start-up stops gracefully too (`start` sees the abort and stops the worker before
 * it resolves), instead of Node's default exit 143. Exit 0 after a graceful stop, 1 when the
 * start or the stop failed; a second signal exits 130 at once, unless it comes within
 * {@link SAME_STOP_WINDOW_MS} of the first: one stop sent by several processes (a process manager
 * signalling the whole process group while npm, npx or tsx forwards the same signal) arrives
 * two or three times at once, and must not cut the graceful stop short. A start-up stopped by a
 * signal that has not ended `startupStopBoundMs` later (when given:
 * {@link STANDALONE_STARTUP_STOP_BOUND_MS}) exits 1 without waiting.
 */
async function runUntilSignalled(
  start: (signal: AbortSignal) => Promise<{ stop(): Promise<void> }>,
  startupStopBoundMs?: number,
): Promise<void> {
  const startup = new AbortController();
  let worker: { stop(): Promise<void> } | undefined;
  let stopping = false;
  let firstAt = 0;
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
      if (performance.now() - firstAt < SAME_STOP_WINDOW_MS) {
        process.stderr.write(
          `tributary: ${signal} again within ${SAME_STOP_WINDOW_MS} ms, taken as the same stop (several processes forward one signal); send it again later to exit without waiting\n`,
        );
        return;
      }
      process.stderr.write(`tributary: ${signal} again, exiting without waiting\n`);
      process.exit(130);
    }
    stopping = true;
    firstAt = performance.now();
    if (worker) {
      void finish(worker.stop());
      return;
    }
    startup.abort();
    if (startupStopBoundMs === undefined) return;
    setTimeout(() => {
      process.stderr.write(
        `tributary: ${signal} during start-up, and the start-up has not ended ${startupStopBoundMs} ms later (a step under way does not return, e.g. a connector's start()); exiting without waiting for it\n`,
      );
      process.exit(1);
    }, startupStopBoundMs);
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  try {
    worker = await start(startup.signal);
  } catch (e) {
    process.stderr.write(`tributary: ${describeFailure(e)}\n`);
    process.exit(1);
  }
  // Stopped during start-up: worker.stop() returns the stop already done.
  if (startup.signal.aborted) void finish(worker.stop());
}

program.parseAsync(process.argv).catch((e: unknown) => {
  process.stderr.write(`tributary: ${describeFailure(e)}\n`);
  process.exit(1);
});
