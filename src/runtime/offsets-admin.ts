import type { Clock } from '../api/clock.js';
import { OffsetDecodeError, TributaryError } from '../api/errors.js';
import type { Logger } from '../api/logger.js';
import type { OffsetChange, SourceConnector, SourceConnectorClass } from '../api/source-connector.js';
import { ConnectorOffsetStore } from '../storage/connector-offset-store.js';
import { withTimeout } from './clock-timers.js';
import type { OffsetEntry, OffsetStore } from './ports.js';

/*
 * Offsets administration: offsets given from outside checked before anything is written
 * (KIP-875's PATCH and DELETE /offsets, KIP-995's offsets at create), the write barrier that
 * lets a stopped task's last flush land first, and the undo of a create that wrote offsets.
 */

/**
 * Whether a connector class overrides `alterOffsets`, i.e. knows about offsets changed from
 * outside (Kafka Connect's `alterOffsets` returning true). Works across copies of Tributary.
 */
export function connectorManagesOffsets(connectorClass: SourceConnectorClass): boolean {
  let proto: object | null = connectorClass.prototype;
  while (proto !== null && !Object.hasOwn(proto, 'alterOffsets')) proto = Object.getPrototypeOf(proto);
  if (proto === null) return false;
  const owner = (proto as { constructor?: unknown }).constructor;
  return !(typeof owner === 'function' && Object.hasOwn(owner, Symbol.for('tributary.source-connector')));
}

/**
 * The message Kafka Connect answers a successful offsets change with (KIP-875), also used as
 * KIP-995's `offsets_status`: plain when the connector handles offset changes itself, with a
 * reminder about external offsets when it does not.
 */
export function offsetsChangedMessage(kind: 'altered' | 'reset', connectorManages: boolean): string {
  return connectorManages
    ? `The offsets for this connector have been ${kind} successfully`
    : `The Connect framework-managed offsets for this connector have been ${kind} successfully. However, if this connector manages offsets externally, they will need to be manually ${kind} in the system that the connector uses.`;
}

/**
 * Validates offsets given from outside (a connector file, `POST /connectors`, `PATCH /offsets`):
 * each partition and non-null offset must decode through the task's codec, keys it does not
 * declare refused by their path (`DecodeOptions.exact`), then the
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
  const typed: Array<OffsetChange<unknown, unknown>> = [];
  const entries: OffsetEntry[] = [];
  const bad: Array<{ partition: unknown; problems: string[] }> = [];
  offsets.forEach((entry, i) => {
    if (typeof entry !== 'object' || entry === null || !('partition' in entry) || !('offset' in entry)) {
      bad.push({ partition: undefined, problems: [`offsets[${i}]: expected {"partition": {...}, "offset": {...} or null}`] });
      return;
    }
    // Submitted by a person: a key the codec does not know is a typo, refused rather than stored.
    const p = codec.decodePartition(entry.partition, { exact: true });
    const o = entry.offset === null ? ({ ok: true, value: null } as const) : codec.decodeOffset(entry.offset, { exact: true });
    const problems = [...(p.ok ? [] : p.problems), ...(o.ok ? [] : o.problems)].map((m) => `offsets[${i}].${m}`);
    if (problems.length > 0) bad.push({ partition: entry.partition, problems });
    if (p.ok && o.ok) {
      let encoded: OffsetEntry;
      try {
        encoded = {
          partition: codec.encodePartition(p.value),
          offset: o.value === null ? null : codec.encodeOffset(o.value),
        };
      } catch (e) {
        // Decoded, but not storable as given (1e400 parses as Infinity): the request's fault.
        bad.push({ partition: entry.partition, problems: [`offsets[${i}]: ${(e as Error).message}`] });
        return;
      }
      typed.push({ partition: p.value, offset: o.value });
      entries.push(encoded);
    }
  });
  const [first] = bad;
  if (first !== undefined && bad.length === 1 && first.partition !== undefined) {
    throw new OffsetDecodeError(name, first.partition, first.problems);
  }
  if (first !== undefined) {
    // Several entries (or one without a partition): name each entry's partition in its problems.
    throw new TributaryError(
      'OFFSET_DECODE',
      `Offsets of connector '${name}' do not decode: ${bad
        .flatMap((b) =>
          b.partition === undefined ? b.problems : b.problems.map((m) => `${m} (partition ${jsonOf(b.partition)})`),
        )
        .join('; ')}`,
    );
  }
  await confirmOffsets(name, connector, config, typed);
  return entries;
}

/**
 * The entries that reset every stored offset of a connector (each partition to null), once
 * the connector's `alterOffsets` accepted the reset. Stored partitions that no longer decode
 * through the codec are reset too, but not shown to `alterOffsets`: a reset must be able to
 * clear offsets the connector cannot read.
 */
export async function resetOffsets<C>(
  name: string,
  connector: SourceConnector<C>,
  config: C,
  stored: readonly OffsetEntry[],
): Promise<OffsetEntry[]> {
  const codec = new connector.taskClass().offsets;
  const typed: Array<OffsetChange<unknown, unknown>> = [];
  for (const entry of stored) {
    const p = codec.decodePartition(entry.partition);
    if (p.ok) typed.push({ partition: p.value, offset: null });
  }
  await confirmOffsets(name, connector, config, typed);
  return stored.map((e) => ({ partition: e.partition, offset: null }));
}

async function confirmOffsets<C>(
  name: string,
  connector: SourceConnector<C>,
  config: C,
  typed: ReadonlyArray<OffsetChange<unknown, unknown>>,
): Promise<void> {
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
}

function jsonOf(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** Outcome of an offsets change: whether the connector handles such changes itself (overrides `alterOffsets`). */
export interface OffsetsChange {
  readonly connectorManagesOffsets: boolean;
}

/** The entry that removes `entry`'s partition. */
export function tombstone(entry: OffsetEntry): OffsetEntry {
  return { partition: entry.partition, offset: null };
}

/**
 * Waits until every offsets write already made for `name` has taken effect, before offsets are
 * read to be replaced: a stopped task's final flush that timed out may still be queued in the
 * store, and landing after a reset it would bring back what was removed. Stores apply writes
 * in call order, so a write of nothing is a barrier. Bounded by `timeoutMs`
 * (`offset.flush.timeout.ms`).
 *
 * @throws TributaryError OFFSET_FLUSH_TIMEOUT when the barrier does not land in time or the store fails
 */
export async function earlierWritesLanded(name: string, store: OffsetStore, clock: Clock, timeoutMs: number): Promise<void> {
  const landed = await withTimeout(clock, store.write(name, []), timeoutMs);
  if (!landed.ok) {
    throw new TributaryError(
      'OFFSET_FLUSH_TIMEOUT',
      landed.timedOut
        ? `An offsets write of connector '${name}' made before it stopped has not finished within offset.flush.timeout.ms (${timeoutMs} ms): the offset store is slow or unreachable. Nothing was changed; try again once it has finished`
        : `The offset store failed while the offsets of connector '${name}' were being changed, and nothing was changed: ${(landed.error as Error).message}`,
      landed.timedOut ? {} : { cause: landed.error },
    );
  }
}

/** What a connector's offsets can be changed on: its name, its target state and the tasks it runs. */
export interface OffsetsOwner {
  readonly name: string;
  readonly target: string;
  readonly tasks: readonly unknown[];
}

/**
 * KIP-875: offsets are changed only while the connector is STOPPED and no task of it runs.
 *
 * @throws TributaryError CONNECTOR_NOT_STOPPED
 */
export function requireStopped(owner: OffsetsOwner): void {
  if (owner.target !== 'STOPPED' || owner.tasks.length > 0) {
    throw new TributaryError(
      'CONNECTOR_NOT_STOPPED',
      `Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/${owner.name}/stop' endpoint`,
    );
  }
}

/** The offsets of one store layer as they were before a create replaced them (see {@link replaceOffsets}). */
export type OffsetsBefore = ReadonlyArray<{ readonly store: OffsetStore; readonly entries: OffsetEntry[] }>;

/**
 * KIP-995: replaces every stored offset of `name` by `entries`, returning what each layer of the
 * store held before (a connector's own offsets topic has two: the worker's and its own), for
 * {@link restoreOffsets} to put back if the create fails later.
 */
export async function replaceOffsets(name: string, store: OffsetStore, entries: readonly OffsetEntry[]): Promise<OffsetsBefore> {
  const previous = await offsetsBefore(name, store);
  await writeReplacing(name, store, entries);
  return previous;
}

/** What each layer of `store` holds for `name` now: read before {@link writeReplacing}, so that a failed write can be undone. */
export async function offsetsBefore(name: string, store: OffsetStore): Promise<OffsetsBefore> {
  const layers = store instanceof ConnectorOffsetStore ? [store.global, store.own] : [store];
  return Promise.all(layers.map(async (layer) => ({ store: layer, entries: await layer.read(name) })));
}

/** Replaces every stored offset of `name` by `entries`; a write that fails may have landed in part. */
export async function writeReplacing(name: string, store: OffsetStore, entries: readonly OffsetEntry[]): Promise<void> {
  await store.write(name, [...(await store.read(name)).map(tombstone), ...entries]);
}

/** Puts the offsets of `name` back as {@link replaceOffsets} found them; a failure is logged as an ERROR, not thrown. */
export async function restoreOffsets(name: string, previous: OffsetsBefore, log: Logger): Promise<void> {
  try {
    for (const { store, entries } of previous) {
      const now = await store.read(name);
      await store.write(name, [...now.map(tombstone), ...entries]);
    }
  } catch (err) {
    log.error(
      { connector: name, event: 'connector.create.cleanup.failed', err },
      'restoring the offsets after a failed create failed; check GET /connectors/{name}/offsets after creating it again',
    );
  }
}

/** A connector whose offsets are changed: {@link OffsetsOwner} with the class and decoded config its `alterOffsets` gets. */
export interface OffsetsTarget extends OffsetsOwner {
  readonly connectorClass: SourceConnectorClass;
  readonly parsedConfig: unknown;
}

/**
 * KIP-875 `PATCH /offsets`: every entry must decode through the codec and be accepted by the
 * connector's `alterOffsets`, else nothing is written. A null offset removes that partition;
 * partitions not given are left alone.
 *
 * @throws TributaryError CONNECTOR_NOT_STOPPED, OFFSET_DECODE, OFFSET_REJECTED
 */
export async function alterStoppedOffsets(
  target: OffsetsTarget,
  store: OffsetStore,
  offsets: ReadonlyArray<{ partition?: unknown; offset?: unknown }>,
  log: Logger,
): Promise<OffsetsChange> {
  requireStopped(target);
  const { name } = target;
  const entries = await validateOffsets(name, new target.connectorClass(), target.parsedConfig, offsets);
  await store.write(name, entries);
  log.info({ event: 'offsets.altered', connector: name, count: entries.length }, 'offsets altered');
  return { connectorManagesOffsets: connectorManagesOffsets(target.connectorClass) };
}

/**
 * KIP-875 `DELETE /offsets`: removes every stored offset once `barrier` (see
 * {@link earlierWritesLanded}) has passed and the connector's `alterOffsets` accepted the
 * reset. Succeeds when there is nothing to remove; stored values that no longer decode are
 * removed too, since a reset is how they are repaired.
 *
 * @throws TributaryError CONNECTOR_NOT_STOPPED, OFFSET_FLUSH_TIMEOUT, OFFSET_REJECTED
 */
export async function resetStoppedOffsets(
  target: OffsetsTarget,
  store: OffsetStore,
  barrier: () => Promise<void>,
  log: Logger,
): Promise<OffsetsChange> {
  requireStopped(target);
  const { name } = target;
  await barrier();
  const stored = store.partitions
    ? (await store.partitions(name)).map((partition) => ({ partition, offset: null }))
    : await store.read(name);
  const entries = await resetOffsets(name, new target.connectorClass(), target.parsedConfig, stored);
  if (entries.length > 0) await store.write(name, entries);
  log.info({ event: 'offsets.reset', connector: name, count: entries.length }, 'offsets reset');
  return { connectorManagesOffsets: connectorManagesOffsets(target.connectorClass) };
}
