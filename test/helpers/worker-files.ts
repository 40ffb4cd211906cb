/**
 * Config files for a standalone worker run in a test: `.properties` text, a worker file and
 * connector files in a fresh temporary folder, and a logger that says nothing.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A logger that drops everything (tests read outcomes, not log lines). */
export const quiet = { debug() {}, info() {}, warn() {}, error() {}, child: () => quiet };

/** `key=value` lines of a `.properties` file, in the object's order. */
export function propertiesText(o: Record<string, string>): string {
  return Object.entries(o)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
}

/**
 * Writes `worker.properties` (with no REST listener unless `worker` sets `listeners`: these runs
 * need none, and a fixed port could be taken) and one `c<i>.properties` per connector into a new
 * folder under the system's temporary one (named `<prefix>…`); returns the options of
 * `runStandalone` that point at them, with the {@link quiet} logger.
 */
export async function writeWorkerFiles(
  prefix: string,
  worker: Record<string, string>,
  connectors: Array<Record<string, string>>,
): Promise<{ workerConfigPath: string; connectorConfigPaths: string[]; logger: typeof quiet }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const workerConfigPath = join(dir, 'worker.properties');
  await writeFile(workerConfigPath, propertiesText({ listeners: '', ...worker }));
  const connectorConfigPaths = await Promise.all(
    connectors.map(async (c, i) => {
      const p = join(dir, `c${i}.properties`);
      await writeFile(p, propertiesText(c));
      return p;
    }),
  );
  return { workerConfigPath, connectorConfigPaths, logger: quiet };
}
