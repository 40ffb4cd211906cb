/**
 * How a Tributary task config is stored in the config topic's `task-<name>-<n>` records, and the
 * work an assignment covers: shared by the herder's reads, its reconciliation and the leader.
 */
import type { ClusterConfigSnapshot, TaskRef } from './ports.js';

/** The property a Tributary task config is stored under in a `task-<name>-<n>` record (as canonical JSON). */
export const TASK_CONFIG_PROPERTY = 'tributary.task.config';

/** A stored task config: Tributary's JSON under {@link TASK_CONFIG_PROPERTY}, else (written by Kafka Connect) the string map itself. */
export function decodeTaskConfig(stored: Readonly<Record<string, string>>): unknown {
  const json = stored[TASK_CONFIG_PROPERTY];
  if (json === undefined) return { ...stored };
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return { ...stored };
  }
}

/** Every configured connector and committed task. */
export function clusterWork(snapshot: ClusterConfigSnapshot): { connectors: string[]; tasks: TaskRef[] } {
  const connectors = [...snapshot.connectors.keys()].sort();
  const tasks: TaskRef[] = [];
  for (const c of connectors) {
    const n = snapshot.taskConfigs.get(c)?.length ?? 0;
    for (let i = 0; i < n; i++) tasks.push({ connector: c, task: i });
  }
  return { connectors, tasks };
}

/** What an assignment depends on: the connectors and their task counts. */
export function workSignature(snapshot: ClusterConfigSnapshot): string {
  const { connectors } = clusterWork(snapshot);
  return JSON.stringify(connectors.map((c) => [c, snapshot.taskConfigs.get(c)?.length ?? 0]));
}
