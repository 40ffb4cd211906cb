/**
 * Tributary's standalone worker running the synthetic connector (bench/lib/synthetic-connector.ts):
 * one task cycling through `partitions` source partitions, `record.size`-byte string values, the
 * same worker and producer settings as the file-source runs. The partitions series.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BenchSettings } from '../lib/settings.js';
import { type Contender, type Launch, properties, type RunContext, sumOfOffsets } from './contender.js';
import { tributaryWorkerProperties } from './tributary.js';

export function syntheticTributary(
  settings: BenchSettings,
  cli: string,
  connectorModule: string,
  sourcePartitions: number,
  librdkafka = false,
): Contender {
  return {
    id: 'synthetic',
    label: `Tributary${librdkafka ? ', sender=librdkafka' : ''}, synthetic task, ${sourcePartitions.toLocaleString('en-US')} source partitions`,
    sendsLines: false,
    settings: [
      `Tributary standalone, bench/lib/synthetic-connector.ts: one task cycling through ${sourcePartitions} source partitions, values of ${settings.lineBytes} B (value.converter=string), null keys, batch.size=${settings.sourceBatchLines}`,
      `same worker and producer settings as the file source runs${librdkafka ? ', sender=librdkafka' : ''}`,
    ],
    async launch(run: RunContext): Promise<Launch> {
      const offsetsFile = join(run.dir, 'tributary-offsets.json');
      const worker = join(run.dir, 'worker.properties');
      const connector = join(run.dir, 'connector.properties');
      const props = tributaryWorkerProperties(settings, run, offsetsFile);
      await writeFile(worker, properties(librdkafka ? { ...props, sender: 'librdkafka' } : props));
      await writeFile(
        connector,
        properties({
          name: 'bench-synthetic',
          'connector.class': `${connectorModule}#SyntheticConnector`,
          'tasks.max': 1,
          topic: run.topic,
          partitions: sourcePartitions,
          'record.size': run.lineBytes,
          'max.records': run.records,
          'batch.size': settings.sourceBatchLines,
        }),
      );
      return {
        command: process.execPath,
        args: [cli, 'standalone', worker, connector],
        kind: 'worker',
        committedRecords: () => sumOfOffsets(offsetsFile, 'seq'),
      };
    },
  };
}
