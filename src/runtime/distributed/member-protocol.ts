import { isLeft } from 'fp-ts/lib/Either.js';
import * as t from 'io-ts';
import { PathReporter } from 'io-ts/lib/PathReporter.js';
import { TributaryError } from '../../api/errors.js';
import type { WorkItems } from './ports.js';

/** The group protocol's name: members that do not all speak it cannot form a group (INCONSISTENT_GROUP_PROTOCOL). */
export const MEMBER_PROTOCOL = 'tributary-1';

const WorkItemsCodec = t.type({
  connectors: t.array(t.string),
  tasks: t.array(t.type({ connector: t.string, task: t.number })),
});

const HeldCodec = t.type({ workerId: t.string, items: WorkItemsCodec, until: t.number });

const MetadataCodec = t.type({
  version: t.literal(1),
  /** Stable identity: `host:port` of the advertised REST listener. */
  workerId: t.string,
  /** The advertised REST URL (leader forwarding, task restarts). */
  url: t.string,
  /** How far this worker has read the config topic, as a decimal string. */
  configOffset: t.string,
  /** What it runs now. */
  owned: WorkItemsCodec,
  /** Shutting down gracefully: the leader holds its work for `scheduled.rebalance.max.delay.ms`. */
  leaving: t.boolean,
  /** The held work of the last assignment it got: a new leader (the old one left) keeps holding it. */
  held: t.array(HeldCodec),
});

const AssignmentCodec = t.type({
  version: t.literal(1),
  leaderWorkerId: t.string,
  leaderUrl: t.string,
  /** The config topic offset the leader assigned from: members read at least this far first. */
  configOffset: t.string,
  runs: WorkItemsCodec,
  revoked: WorkItemsCodec,
  delayMs: t.number,
  /** Every member's worker id and URL, so any worker can reach a task's owner. */
  members: t.array(t.type({ workerId: t.string, url: t.string })),
  /** Work held for workers that left gracefully, until when (the leader's clock, ms since the epoch). */
  held: t.array(HeldCodec),
});

/** What a member tells the leader at every join. */
export type MemberMetadata = t.TypeOf<typeof MetadataCodec>;
/** What the leader tells each member. */
export type MemberAssignmentData = t.TypeOf<typeof AssignmentCodec>;

function decode<A>(codec: t.Type<A, unknown>, bytes: Buffer, what: string): A {
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch (e) {
    throw new TributaryError(
      'CONFIG_INVALID',
      `The group ${what} is not JSON (${(e as Error).message}): is a worker of another kind in this group.id?`,
    );
  }
  const result = codec.decode(json);
  if (isLeft(result)) {
    throw new TributaryError(
      'CONFIG_INVALID',
      `The group ${what} does not decode: ${PathReporter.report(result).join('; ')}. Workers of different Tributary versions in one group.id?`,
    );
  }
  return result.right;
}

/** JSON bytes of a member's metadata. */
export function encodeMetadata(metadata: MemberMetadata): Buffer {
  return Buffer.from(JSON.stringify(metadata));
}

/** Decodes a member's metadata; throws a CONFIG_INVALID error saying what is wrong. */
export function decodeMetadata(bytes: Buffer): MemberMetadata {
  return decode(MetadataCodec, bytes, 'member metadata');
}

/** JSON bytes of one member's assignment. */
export function encodeAssignment(assignment: MemberAssignmentData): Buffer {
  return Buffer.from(JSON.stringify(assignment));
}

/** Decodes an assignment; throws a CONFIG_INVALID error saying what is wrong. */
export function decodeAssignment(bytes: Buffer): MemberAssignmentData {
  return decode(AssignmentCodec, bytes, 'assignment');
}

/** Nothing to run. */
export const NO_WORK: WorkItems = { connectors: [], tasks: [] };

/** `<connector>-<task>`, as Kafka Connect names a task. */
export function taskKey(connector: string, task: number): string {
  return `${connector}-${task}`;
}
