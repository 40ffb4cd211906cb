import type { ConfigProblem } from '../api/config-def.js';
import { configTypes, defineConfig } from '../api/config-def.js';
import { OffsetDecodeError, TributaryError } from '../api/errors.js';
import type { SourceConnector } from '../api/source-connector.js';
import type { OffsetEntry } from './ports.js';
import { resolveTaskSettings } from './task-settings.js';

/** Connector config keys the runtime owns, beside the connector's own. */
export const runtimeConnectorConfig = defineConfig({
  name: { type: configTypes.string, description: 'Unique name of the connector.' },
  'connector.class': {
    type: configTypes.string,
    description: 'The connector: a module path or package with an optional #ExportName.',
  },
  'tasks.max': { type: configTypes.positiveInt, default: 1, description: 'The most tasks this connector may run.' },
});

/** What {@link validateConnectorConfig} finds: the decoded connector config, or problems per key. */
export type ValidatedConfig<C> = { ok: true; config: C; tasksMax: number } | { ok: false; problems: ConfigProblem[] };

/**
 * Validates a connector config: the runtime's keys (`name`, `connector.class`, `tasks.max`,
 * heartbeat and converter settings) and the connector's own, through its config definition.
 */
export function validateConnectorConfig<C>(
  connector: SourceConnector<C>,
  raw: Readonly<Record<string, unknown>>,
  workerConfig: Readonly<Record<string, unknown>>,
): ValidatedConfig<C> {
  const runtime = runtimeConnectorConfig.parse(raw);
  const own = connector.config.parse(raw);
  const problems: ConfigProblem[] = [...(runtime.ok ? [] : runtime.problems), ...(own.ok ? [] : own.problems)];
  try {
    resolveTaskSettings(workerConfig, raw);
  } catch (e) {
    for (const message of (e as { problems?: string[] }).problems ?? [(e as Error).message]) {
      problems.push({ key: /^[^ ]+ ([^:]+):/.exec(message)?.[1] ?? '', message });
    }
  }
  if (!runtime.ok || !own.ok || problems.length > 0) return { ok: false, problems };
  return { ok: true, config: own.value, tasksMax: runtime.value['tasks.max'] };
}

/**
 * Validates offsets given from outside (a connector file, `POST /connectors`, `PATCH /offsets`):
 * each partition and non-null offset must decode through the task's codec, then the
 * connector's `alterOffsets` must accept them all. Nothing is written here.
 * Returns the entries in stored (canonical) form.
 */
export async function validateOffsets<C>(
  name: string,
  connector: SourceConnector<C>,
  config: C,
  offsets: ReadonlyArray<{ partition?: unknown; offset?: unknown }>,
): Promise<OffsetEntry[]> {
  const codec = new connector.taskClass().offsets;
  const typed: Array<{ partition: unknown; offset: unknown }> = [];
  const entries: OffsetEntry[] = [];
  const problems: string[] = [];
  offsets.forEach((entry, i) => {
    if (typeof entry !== 'object' || entry === null || !('partition' in entry) || !('offset' in entry)) {
      problems.push(`offsets[${i}]: expected {"partition": {...}, "offset": {...} or null}`);
      return;
    }
    const p = codec.decodePartition(entry.partition);
    const o = entry.offset === null ? ({ ok: true, value: null } as const) : codec.decodeOffset(entry.offset);
    if (!p.ok) problems.push(...p.problems.map((m) => `offsets[${i}].${m}`));
    if (!o.ok) problems.push(...o.problems.map((m) => `offsets[${i}].${m}`));
    if (p.ok && o.ok) {
      typed.push({ partition: p.value, offset: o.value });
      entries.push({
        partition: codec.encodePartition(p.value),
        offset: o.value === null ? null : codec.encodeOffset(o.value),
      });
    }
  });
  if (problems.length > 0) throw new OffsetDecodeError(name, 'offsets', problems);
  let accepted: boolean;
  try {
    accepted = await connector.alterOffsets(config, typed);
  } catch (e) {
    throw new TributaryError('OFFSET_REJECTED', `Connector '${name}' rejected the offsets: ${(e as Error).message}`, {
      cause: e,
    });
  }
  if (!accepted)
    throw new TributaryError(
      'OFFSET_REJECTED',
      `Connector '${name}' does not accept these offsets (its alterOffsets returned false)`,
    );
  return entries;
}
