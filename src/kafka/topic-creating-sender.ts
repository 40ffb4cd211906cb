import { TributaryError } from '../api/errors.js';
import type { OutgoingRecord, RecordSender, SendCallback, SenderStall } from '../runtime/ports.js';
import type { TopicCreationSettings } from '../runtime/topic-creation-settings.js';
import type { TopicAdmin } from './topic-admin.js';

/**
 * KIP-158 for source connectors: before the first record to a topic this task has not written
 * yet, creates the topic with the settings of the first `topic.creation` group that matches it
 * (or finds it there). Records for that topic wait, in order, until then; other topics flow on.
 */
export class TopicCreatingSender implements RecordSender {
  private readonly ready = new Set<string>();
  private readonly waiting = new Map<string, Array<[OutgoingRecord, SendCallback]>>();

  /**
   * @param ready Topics already made sure of for this connector (its heartbeat topic, created
   *   at connector start with these same settings), so they are not created a second time.
   */
  constructor(
    private readonly inner: RecordSender,
    private readonly admin: Pick<TopicAdmin, 'ensureTopics'>,
    private readonly settings: TopicCreationSettings,
    ready: Iterable<string> = [],
  ) {
    for (const topic of ready) this.ready.add(topic);
  }

  send(record: OutgoingRecord, onDone: SendCallback): void {
    if (this.ready.has(record.topic)) {
      this.inner.send(record, onDone);
      return;
    }
    const queue = this.waiting.get(record.topic);
    if (queue) {
      queue.push([record, onDone]);
      return;
    }
    this.waiting.set(record.topic, [[record, onDone]]);
    void this.create(record.topic);
  }

  async flush(): Promise<void> {
    while (this.waiting.size > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    await this.inner.flush();
  }

  onStall(listener: (stall: SenderStall | undefined) => void): void {
    this.inner.onStall?.(listener);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private async create(topic: string): Promise<void> {
    const s = this.settings.settingsFor(topic);
    let error: Error | undefined;
    try {
      await this.admin.ensureTopics([topic], {
        partitions: s.partitions,
        replicationFactor: s.replicationFactor,
        configs: s.configs,
      });
      this.ready.add(topic);
    } catch (e) {
      error = new TributaryError(
        'SEND_FAILED',
        `Task failed to create topic '${topic}' (topic.creation group '${s.group}'): ${(e as Error).message}. Make sure the worker may create topics, or create it, and restart the task.`,
        { cause: e },
      );
    }
    const queue = this.waiting.get(topic) ?? [];
    this.waiting.delete(topic);
    for (const [record, onDone] of queue) {
      if (error) onDone(error, undefined);
      else this.inner.send(record, onDone);
    }
  }
}
