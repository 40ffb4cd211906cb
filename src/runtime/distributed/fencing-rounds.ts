import { canonicalJson } from '../../api/canonical-json.js';
import { isTributaryError } from '../../api/errors.js';
import type { Logger } from '../../api/logger.js';
import type { Worker } from '../worker.js';
import type { Membership } from './membership.js';
import type { ClusterConfigSnapshot, ConfigTopicStore, ProducerFencer } from './ports.js';
import { decodeTaskConfig } from './task-config-record.js';
import { zombieFencing } from './zombie-fencing.js';

/** Options of {@link FencingRounds}. */
export interface FencingRoundsOptions {
  readonly fencer: ProducerFencer;
  /** A task's transactional id, as its producer uses it. */
  readonly transactionalId: (connector: string, task: number) => string;
  /** Wait before a failed fencing round is tried again. */
  readonly retryMs: number;
  readonly config: ConfigTopicStore;
  readonly membership: Membership;
  readonly worker: Worker;
  readonly log: Logger;
  /** The leader's serialized writes (see LeaderWrites). */
  readonly leaderWrite: <T>(fn: (snapshot: ClusterConfigSnapshot) => Promise<T>) => Promise<T>;
  readonly stopping: () => boolean;
}

/**
 * Exactly-once (KIP-618) in distributed mode, both sides of a fencing round: the leader's rounds
 * ({@link fenceZombies}, planned by {@link zombieFencing}), and this worker's answer to a round
 * that fenced a task it still runs ({@link restartFencedTasks}).
 */
export class FencingRounds {
  /** Connectors whose fencing round runs now (leader only). */
  private readonly fencing = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: FencingRoundsOptions) {}

  /**
   * Leader: a fencing round for each connector pending one (Kafka Connect's
   * `fenceZombieSourceTasks`): fences the transactional ids of every task id that may have run
   * before, then writes the task count record, which lets the new task configs start. A failed
   * round is logged and tried again.
   */
  fenceZombies(): void {
    const { membership, config, log, fencer, transactionalId } = this.options;
    if (!membership.isLeader || this.options.stopping()) return;
    for (const name of config.snapshot().pendingFencing) {
      if (this.fencing.has(name)) continue;
      this.fencing.add(name);
      this.options
        .leaderWrite(async (snapshot) => {
          const round = zombieFencing(snapshot, name, transactionalId);
          if (round === undefined) return;
          await fencer.fence(round.transactionalIds);
          membership.assertMember(`The task count record of connector ${name}`);
          await config.putTaskCountRecord(name, round.taskCount);
          log.info(
            { event: 'connector.tasks.fenced', connector: name, fenced: round.transactionalIds.length },
            `fenced the producers of ${round.transactionalIds.length} earlier task(s) of ${name}; its tasks may start`,
          );
        })
        .then(
          () => {
            this.fencing.delete(name);
            // A commit that came meanwhile may need another round.
            this.fenceZombies();
          },
          (err: unknown) => {
            this.fencing.delete(name);
            log.error(
              { event: 'connector.tasks.fencing.failed', connector: name, err },
              `fencing the earlier tasks of ${name} failed; its tasks stay stopped and it is tried again`,
            );
            clearTimeout(this.timer);
            this.timer = setTimeout(() => this.fenceZombies(), this.options.retryMs);
            this.timer.unref();
          },
        );
    }
  }

  /**
   * A task this worker still owns whose producer was fenced was fenced by the leader's fencing
   * round (which fences every task id of the connector, also one whose config did not change, so
   * kept running here), not by a newer owner: it is started again, and its new producer takes
   * the transactional id back. A zombie has lost its membership and never gets here (statuses
   * are published only with a confirmed membership).
   *
   * The round was for task configs this worker may not have read yet: it reads the config topic
   * to its end first, and starts the task again only when no round is pending for its connector
   * and its stored config is the one it ran with. Otherwise the new config is placed as it is
   * read (never the old one again: under exactly-once it would duplicate what the new task
   * configs gave to other tasks).
   */
  async restartFencedTasks(): Promise<void> {
    const { worker, membership, config, log } = this.options;
    const fenced = (): Array<{ connector: string; task: number; placed: unknown }> => {
      const out: Array<{ connector: string; task: number; placed: unknown }> = [];
      for (const name of worker.connectorNames()) {
        for (const t of worker.connector(name)?.tasks ?? []) {
          const s = t.runner.status;
          if (s.state !== 'FAILED' || !isTributaryError(s.error) || s.error.code !== 'TRANSACTION_FENCED') continue;
          if (membership.runsTask(name, t.id)) out.push({ connector: name, task: t.id, placed: t.placed ?? t.config });
        }
      }
      return out;
    };
    if (fenced().length === 0) return;
    let snapshot: ClusterConfigSnapshot;
    try {
      snapshot = await config.readToEnd();
    } catch (err) {
      log.warn(
        { event: 'task.fenced.restart.deferred', err },
        'a fenced task is not started again yet: the config topic cannot be read to its end; tried again at the next status round',
      );
      return;
    }
    for (const t of fenced()) {
      if (snapshot.pendingFencing.has(t.connector)) continue;
      const stored = snapshot.taskConfigs.get(t.connector)?.[t.task];
      if (stored === undefined || canonicalJson(decodeTaskConfig(stored)) !== canonicalJson(t.placed)) {
        log.info(
          { event: 'task.fenced.reconfigured', connector: t.connector, task: t.task },
          `task ${t.task} of ${t.connector} was fenced for new task configs: it starts with those as they are placed, not again with its old one`,
        );
        continue;
      }
      log.warn(
        { event: 'task.fenced.restart', connector: t.connector, task: t.task },
        `task ${t.task} of ${t.connector} was fenced by a fencing round while it runs here; starting it again`,
      );
      await worker
        .restartTask(t.connector, t.task)
        .catch((err: unknown) =>
          log.error(
            { event: 'task.restart.failed', connector: t.connector, task: t.task, err },
            'restarting a fenced task failed',
          ),
        );
    }
  }

  close(): void {
    clearTimeout(this.timer);
  }
}
