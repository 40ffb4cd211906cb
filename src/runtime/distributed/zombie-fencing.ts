import type { ClusterConfigSnapshot } from './ports.js';

/** One round of KIP-618 zombie fencing for a connector, as {@link zombieFencing} plans it. */
export interface ZombieFencingRound {
  /** The transactional ids to fence, for task ids 0 … n-1. */
  readonly transactionalIds: readonly string[];
  /** The `tasks-fencing-<connector>` count to write once they are fenced. */
  readonly taskCount: number;
}

/**
 * What the leader must fence before the latest task configs of `connector` may start with
 * exactly-once, or undefined when nothing is pending (no commit since the last task count
 * record, or the connector is gone).
 *
 * Every task id that may have run before is fenced: those below the last task count record
 * (a shrunk connector's dropped ids included) and those of the new task configs (not started
 * yet, so fencing them is harmless). The count written is the larger of the two, never less
 * than the record before: task configs are written by whichever worker runs the connector, so
 * a newer commit may land between the leader's read and its record, and the record must still
 * cover every id that commit's tasks run with.
 *
 * @param transactionalId the transactional id of a task (`${group.id}-${connector}-${task}`)
 */
export function zombieFencing(
  snapshot: ClusterConfigSnapshot,
  connector: string,
  transactionalId: (connector: string, task: number) => string,
): ZombieFencingRound | undefined {
  if (!snapshot.pendingFencing.has(connector) || !snapshot.connectors.has(connector)) return undefined;
  const taskCount = Math.max(snapshot.taskCountRecords.get(connector) ?? 0, snapshot.taskConfigs.get(connector)?.length ?? 0);
  return {
    transactionalIds: Array.from({ length: taskCount }, (_, task) => transactionalId(connector, task)),
    taskCount,
  };
}
