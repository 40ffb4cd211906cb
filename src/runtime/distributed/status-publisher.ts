import type { Logger } from '../../api/logger.js';
import type { Worker } from '../worker.js';
import type { Membership } from './membership.js';
import type { ConfigTopicStore, StatusEntry, StatusTopicStore } from './ports.js';

/** Options of {@link StatusPublisher}. */
export interface StatusPublisherOptions {
  readonly worker: Worker;
  readonly status: StatusTopicStore;
  readonly config: ConfigTopicStore;
  readonly membership: Membership;
  readonly log: Logger;
  /** Runs first in every round (exactly-once: fenced tasks started again). */
  readonly beforePublish: () => Promise<void>;
}

/**
 * Writes the statuses of what runs here to the status topic (`status-connector-<name>`,
 * `status-task-<name>-<n>`, KIP-558 topic records), each only when it changed, with this
 * worker's id and generation; UNASSIGNED for what moved away; FAILED with the trace for a
 * connector that could not be prepared here.
 */
export class StatusPublisher {
  /** What was written, by key: a write is skipped when nothing changed. */
  private readonly written = new Map<string, string>();
  /** Connectors that could not be prepared on this worker, with the trace. */
  private readonly placeFailures = new Map<string, string>();

  constructor(private readonly options: StatusPublisherOptions) {}

  placed(name: string): void {
    this.placeFailures.delete(name);
  }

  placeFailed(name: string, trace: string): void {
    this.placeFailures.set(name, trace);
  }

  /** Forgets the failures of connectors not wanted here any more. */
  keepFailures(wanted: ReadonlySet<string> | ReadonlyMap<string, unknown>): void {
    for (const name of [...this.placeFailures.keys()]) if (!wanted.has(name)) this.placeFailures.delete(name);
  }

  /** A status record as this worker writes it now. */
  entry(state: StatusEntry['state'], trace?: string, version?: string): StatusEntry {
    return {
      state,
      workerId: this.options.membership.id.workerId,
      generation: this.options.membership.leadership?.generation ?? 0,
      ...(trace !== undefined ? { trace } : {}),
      ...(version !== undefined ? { version } : {}),
    };
  }

  private async put(key: string, entry: StatusEntry, write: () => Promise<void>): Promise<void> {
    const text = `${entry.state}|${entry.trace ?? ''}|${entry.generation}`;
    if (this.written.get(key) === text) return;
    this.written.set(key, text);
    try {
      await write();
    } catch (err) {
      this.written.delete(key);
      this.options.log.warn({ event: 'status.write.failed', key, err }, 'writing a status record failed; it is tried again');
    }
  }

  /** One round: the statuses of everything that runs here, and the topics its tasks wrote to. */
  async publish(): Promise<void> {
    const { worker, status, membership } = this.options;
    // A worker that was frozen must not report its old work as running: it may run elsewhere now.
    if (!membership.fresh()) return;
    await this.options.beforePublish();
    const assigned = membership.assigned;
    const mine = new Set(assigned.connectors);
    for (const [name, trace] of this.placeFailures) {
      if (mine.has(name))
        await this.put(`c:${name}`, this.entry('FAILED', trace), () => status.putConnector(name, this.entry('FAILED', trace)));
      for (const t of assigned.tasks.filter((x) => x.connector === name)) {
        await this.put(`t:${name}-${t.task}`, this.entry('FAILED', trace), () => status.putTask(t, this.entry('FAILED', trace)));
      }
    }
    for (const name of worker.connectorNames()) {
      const runner = worker.connector(name);
      if (runner === undefined) continue;
      const s = runner.status();
      if (mine.has(name)) {
        const state = s.connector.state === 'STOPPED' ? 'STOPPED' : s.connector.state;
        const e = this.entry(state, s.connector.trace, s.connector.version);
        await this.put(`c:${name}`, e, () => status.putConnector(name, e));
      }
      for (const t of s.tasks) {
        const e = this.entry(t.state, t.trace, t.version);
        await this.put(`t:${name}-${t.id}`, e, () => status.putTask({ connector: name, task: t.id }, e));
      }
      for (const topic of runner.activeTopics) {
        const key = `topic:${name}:${topic}`;
        if (this.written.has(key)) continue;
        this.written.set(key, '1');
        await status.putTopic(name, topic, 0).catch((err: unknown) => {
          this.written.delete(key);
          this.options.log.warn(
            { event: 'status.write.failed', key, err },
            'writing a topic status record failed; it is tried again',
          );
        });
      }
    }
  }

  /** The connector (and its tasks) moved away from this worker: UNASSIGNED where this worker wrote a status. */
  async markUnassigned(name: string): Promise<void> {
    const { status, config } = this.options;
    for (const key of [...this.written.keys()]) {
      if (key === `c:${name}`) {
        this.written.delete(key);
        if (config.snapshot().connectors.has(name))
          await status.putConnector(name, this.entry('UNASSIGNED')).catch((err: unknown) => this.writeFailed(`c:${name}`, err));
      } else if (key.startsWith(`t:${name}-`)) {
        this.written.delete(key);
        const task = Number(key.slice(`t:${name}-`.length));
        if (config.snapshot().connectors.has(name))
          await status
            .putTask({ connector: name, task }, this.entry('UNASSIGNED'))
            .catch((err: unknown) => this.writeFailed(`t:${name}-${task}`, err));
      } else if (key.startsWith(`topic:${name}:`)) this.written.delete(key);
    }
  }

  /** After a topics reset: the topics are written again as the tasks use them. */
  forgetTopics(name: string): void {
    for (const key of [...this.written.keys()]) if (key.startsWith(`topic:${name}:`)) this.written.delete(key);
  }

  private writeFailed(key: string, err: unknown): void {
    this.options.log.warn({ event: 'status.write.failed', key, err }, 'writing a status record failed');
  }
}
