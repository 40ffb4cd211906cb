import { TributaryError } from '../../api/errors.js';
import type { Worker } from '../worker.js';
import type { Membership } from './membership.js';
import type { StatusTopicStore } from './ports.js';

/**
 * How many times a task restart may be forwarded between workers, as Kafka Connect's
 * `forward=true|false`: a worker that does not run the task sends it to the leader, the leader
 * to the task's owner, and there it is done or refused.
 */
export const MAX_TASK_RESTART_HOPS = 2;

/** What {@link routeTaskRestart} needs. */
export interface TaskRestartRouting {
  readonly worker: Worker;
  readonly membership: Membership;
  readonly status: StatusTopicStore;
  /** Sends the restart to another worker, saying how many hops it has made with this one. */
  readonly restartRemoteTask: (url: string, connector: string, task: number, hops: number) => Promise<void>;
}

/**
 * `POST /connectors/{c}/tasks/{t}/restart`: restarts the task here if it runs here; else a worker
 * that is not the leader forwards it to the leader (only a request it got first-hand), and the
 * leader forwards it to the worker its assignment gave the task (else the one its status names).
 * Two workers with stale views of the leader so never send it back and forth: a request that
 * cannot be done within {@link MAX_TASK_RESTART_HOPS} is refused (409, retry) with the reason.
 *
 * @param hops how many times the request was forwarded before it came here (0: from a client)
 */
export async function routeTaskRestart(r: TaskRestartRouting, name: string, taskId: number, hops: number): Promise<void> {
  if (r.membership.runsTask(name, taskId) && r.worker.connector(name)) {
    await r.worker.restartTask(name, taskId);
    return;
  }
  const what = `Cannot restart task ${taskId} of connector ${name}`;
  if (!Number.isInteger(hops) || hops < 0 || hops >= MAX_TASK_RESTART_HOPS) {
    throw new TributaryError(
      'REBALANCE_IN_PROGRESS',
      `${what}: the request was forwarded here ${hops} times (at most ${MAX_TASK_RESTART_HOPS}) and this worker does not run the task either, likely because a rebalance is moving it; retry`,
    );
  }
  const { url: leaderUrl, self } = await r.membership.leader();
  if (!self) {
    if (hops > 0) {
      throw new TributaryError(
        'REBALANCE_IN_PROGRESS',
        `${what}: the request was forwarded here, but this worker neither runs the task nor leads the group (the sender's view of the group is stale, likely because of a rebalance); retry`,
      );
    }
    await r.restartRemoteTask(leaderUrl, name, taskId, hops + 1);
    return;
  }
  const own = r.membership.id;
  const statusOwner = r.status.task({ connector: name, task: taskId })?.workerId;
  // A status naming this worker, which does not run the task, is stale: sending it here again would loop.
  const url =
    r.membership.assignedOwnerUrl({ connector: name, task: taskId }) ??
    (statusOwner === undefined || statusOwner === own.workerId ? undefined : r.membership.memberUrls.get(statusOwner));
  if (url === undefined || url === own.url) {
    throw new TributaryError(
      'REBALANCE_IN_PROGRESS',
      `${what}: it is not running on any worker this one knows (it may be moving in a rebalance); retry`,
    );
  }
  await r.restartRemoteTask(url, name, taskId, hops + 1);
}
