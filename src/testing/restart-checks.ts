/**
 * The restart checks of the source task contract: after a crash or a graceful stop, and after a
 * crash with heartbeats and KIP-910 offset updates committed, a task resumes exactly after its
 * committed offsets (no gap, no repeat before them).
 */
import type { SourceRecord } from '../api/source-record.js';
import type { SourceTask } from '../api/source-task.js';
import type { CapturedRecord } from './mock-runtime.js';
import { assertNotFailed, type Contract, groupBy, HEARTBEAT_TOPIC, type Probe } from './source-task-contract.js';
import { vitestApi } from './vitest-api.js';

/**
 * After the first `ackedBeforeRestart` records of each source partition are committed and the rest
 * held back, a crash (`crash`) or a graceful stop: the new task resumes exactly after them.
 */
export async function checkRestart<P, O, C>(contract: Contract<P, O, C>, crash: boolean): Promise<void> {
  const { partitionKey, sequence, ackedBeforeRestart: acked } = contract;
  const seen = new Map<string, number>();
  let crashed: SourceTask<P, O, C> | undefined;
  const run = await contract.launch({
    // Acknowledge the first records of each partition and hold back the rest, so the commit
    // point falls in the middle of what the task produced.
    holdAcks: (record) => {
      if (record.heartbeat) return false;
      const key = partitionKey(record.sourcePartition);
      const n = seen.get(key) ?? 0;
      seen.set(key, n + 1);
      return n >= acked;
    },
  });
  try {
    await run.advanceBy(contract.runFor);
    assertNotFailed(run, 'before the restart');
    const produced = groupBy(
      run.sender.sent.filter((out) => !out.heartbeat).map((out) => out.source as SourceRecord<P, O>),
      (r) => partitionKey(r.sourcePartition),
    );
    if (![...produced.values()].some((records) => records.length > acked)) {
      const counts = [...produced.values()].map((r) => r.length);
      throw new Error(
        `In ${String(contract.runFor)} the task produced ${counts.length === 0 ? 'no records' : `${counts.join(', ')} records per source partition`}; ` +
          `this check acknowledges the first ${acked} of each partition and needs more after them: ` +
          'give a task config that produces more records, a longer runFor or a smaller ackedBeforeRestart',
      );
    }
    vitestApi()
      .expect(await run.flush(), 'the offset flush before the restart must succeed')
      .toBe(true);
    const before = run.captured.length;
    if (crash) crashed = run.task;
    await run.restart(crash ? { crash: true } : {});
    assertNotFailed(run, 'when started again after the restart');
    await run.advanceBy(contract.runFor);
    assertNotFailed(run, 'after the restart');
    const resumed = groupBy(
      run.captured.slice(before).filter((r) => !r.heartbeat),
      (r) => partitionKey(r.sourcePartition),
    );
    for (const [key, records] of produced) {
      const committed = records.slice(0, acked).map(sequence);
      const unacked = records.slice(acked).map(sequence);
      const again = (resumed.get(key) ?? []).map(sequence);
      const last = committed.at(-1);
      vitestApi()
        .expect(
          again.filter((s) => committed.includes(s)),
          `after the restart, source partition ${key} repeated records at or before its committed offset (${last})`,
        )
        .toEqual([]);
      if (unacked.length === 0) continue;
      vitestApi()
        .expect(
          again.length,
          `after the restart, source partition ${key} produced nothing, though its records after the committed offset (${last}) were never acknowledged`,
        )
        .toBeGreaterThan(0);
      // All of them: a task that re-emits the first one and then stalls has lost the rest.
      const slow =
        again.length < unacked.length
          ? `; it produced only ${again.length} in ${String(contract.runFor)}: if the source is slow rather than stalled, give a longer runFor`
          : '';
      vitestApi()
        .expect(
          again.slice(0, unacked.length),
          `after the restart, source partition ${key} must go on with the first record after its committed offset (${last}), ` +
            `then every one of the ${unacked.length} records it had produced after it that were never acknowledged, in order${slow}`,
        )
        .toEqual(unacked);
    }
  } finally {
    await run.stop();
    // Release what the end of a crashed process would have (files, sockets), after the check.
    await crashed?.stop();
  }
}

/**
 * Crashes a run in the middle of its data with heartbeats on (for a task that has them), once
 * heartbeats, KIP-910 offset updates and flushes have had their say, then requires each source
 * partition to go on with the record that followed, in a plain run, the last one acknowledged
 * before the crash. A heartbeat or updateOffsets() offset ahead of records not yet polled
 * skips them (lost); one behind the data repeats records. Runs twice for a task with
 * heartbeats: with nothing held back (offset updates apply), and with the data after a
 * heartbeat held back, so that the heartbeat's offset is what the crash leaves committed.
 */
export async function checkRestartWithHeartbeats<P, O, C>(contract: Contract<P, O, C>): Promise<void> {
  const probe = await contract.probe();
  if (probe.records.length === 0) {
    throw new Error(
      `In ${String(contract.runFor)} the task produced no records, so there is no data to crash in the middle of: give a task config that produces some, or a longer runFor`,
    );
  }
  await crashMidStream(contract, probe, false);
  if (contract.hasHeartbeats) await crashMidStream(contract, probe, true);
}

async function crashMidStream<P, O, C>(
  contract: Contract<P, O, C>,
  probe: Probe<P, O>,
  holdAfterHeartbeat: boolean,
): Promise<void> {
  const { partitionKey, sequence, hasHeartbeats, heartbeatIntervalMs: interval } = contract;
  const order = new Map(
    [...groupBy(probe.records, (r) => partitionKey(r.sourcePartition))].map(([key, records]) => [key, records.map(sequence)]),
  );
  // From the time half of a plain run's records were acknowledged. Holding after a heartbeat,
  // the run goes on (one heartbeat interval at most) until a heartbeat comes while its
  // partition has data still to come; the data after it is held back, as a heartbeat due
  // with a record would otherwise always see the record's offset committed after its own.
  const times = probe.records.map((r) => r.ackedAt - probe.startedAt).sort((a, b) => a - b);
  const middle = Math.min(contract.runForMs, Math.max(1, times[Math.floor((times.length - 1) / 2)] ?? 0));
  let armed = false;
  const sent = new Map<string, number>();
  const held = new Set<string>();
  const run = await contract.launch({
    connectorConfig: hasHeartbeats ? { 'heartbeat.interval.ms': interval, 'heartbeat.topic': HEARTBEAT_TOPIC } : {},
    holdAcks: holdAfterHeartbeat
      ? (record) => {
          const key = partitionKey(record.sourcePartition);
          if (!record.heartbeat) {
            sent.set(key, (sent.get(key) ?? 0) + 1);
            return held.has(key);
          }
          if (armed && (sent.get(key) ?? 0) < (order.get(key)?.length ?? 0)) held.add(key);
          return false;
        }
      : undefined,
  });
  const how = !hasHeartbeats
    ? 'nothing held back'
    : holdAfterHeartbeat
      ? 'heartbeats on, the data after a heartbeat held back'
      : 'heartbeats on, nothing held back';
  const lastData = (key: string) => {
    const records = run.dataRecords.filter((r) => partitionKey(r.sourcePartition) === key);
    return records.length === 0 ? undefined : sequence(records[records.length - 1] as CapturedRecord<P, O>);
  };
  let crashed: SourceTask<P, O, C> | undefined;
  try {
    const startedAt = run.clock.now();
    await run.clock.advanceTo(startedAt + middle);
    armed = true;
    if (holdAfterHeartbeat) {
      const deadline = startedAt + Math.min(contract.runForMs, middle + interval);
      for (let next = run.clock.nextTimerAt; held.size === 0 && next !== undefined && next <= deadline; ) {
        await run.clock.advanceTo(next);
        next = run.clock.nextTimerAt;
      }
    }
    const crashAt = run.clock.now() - startedAt;
    const when = `a crash ${crashAt} ms in (${how})`;
    assertNotFailed(run, `before ${when}`);
    // What is acknowledged when the flush starts is what it commits.
    const acked = new Map([...order.keys()].map((key) => [key, lastData(key)]));
    vitestApi()
      .expect(await run.flush(), `the offset flush before ${when} must succeed`)
      .toBe(true);
    const before = run.captured.length;
    crashed = run.task;
    await run.restart({ crash: true });
    assertNotFailed(run, `when started again after ${when}`);
    await run.advanceBy(contract.runFor);
    assertNotFailed(run, `after ${when}`);
    const resumed = groupBy(
      run.captured.slice(before).filter((r) => !r.heartbeat),
      (r) => partitionKey(r.sourcePartition),
    );
    for (const [key, seqs] of order) {
      const last = acked.get(key);
      const lastAt = last === undefined ? -1 : seqs.indexOf(last);
      if (last !== undefined && lastAt < 0) {
        throw new Error(
          `Source partition ${key}: record ${last}, acknowledged before ${when}, is not among the records of a plain run of ${String(contract.runFor)}: ` +
            'this check needs the task to produce the same records in the same order in both; ' +
            "give a sequence option that names records alike in both runs, or skip: { restartWithHeartbeats: 'why' }",
        );
      }
      const again = (resumed.get(key) ?? []).map(sequence);
      vitestApi()
        .expect(
          again.filter((s) => {
            const i = seqs.indexOf(s);
            return i >= 0 && i <= lastAt;
          }),
          `after ${when}, source partition ${key} repeated records at or before the last one acknowledged and flushed (${last}): ` +
            'its committed offset went back behind its data (a heartbeat or updateOffsets() offset older than the records before it?)',
        )
        .toEqual([]);
      const next = seqs[lastAt + 1];
      if (next === undefined) continue;
      const after = last === undefined ? 'with no record acknowledged' : `after its last record acknowledged (${last})`;
      vitestApi()
        .expect(
          again[0],
          `after ${when}, source partition ${key} ${after} must go on with ${next}, the next record of a plain run; ` +
            `it produced ${again.length === 0 ? 'nothing' : `${again[0]} first`} in ${String(contract.runFor)}. ` +
            'A heartbeat or updateOffsets() offset ahead of records not yet polled loses them; if the source is only slow, give a longer runFor',
        )
        .toBe(next);
    }
  } finally {
    await run.stop();
    // Release what the end of a crashed process would have (files, sockets), after the check.
    await crashed?.stop();
  }
}
