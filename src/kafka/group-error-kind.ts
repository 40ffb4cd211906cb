/**
 * What a failed group request (FindCoordinator, JoinGroup, SyncGroup, Heartbeat) means for the
 * member, decided from the Kafka error type kafkajs puts in `.type` (on the error or a `cause`)
 * or from kafkajs's error `name` for network failures.
 */

import { isKafkajsError } from './kafkajs-errors.js';

/**
 * - `rebalance`: the group is rebalancing; rejoin, keeping the work (cooperative).
 * - `member-id-required`: KIP-394: join again with the member id in {@link GroupErrorKindOf.memberId}.
 * - `lost`: this member's generation or id is gone (`UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`,
 *   `FENCED_*`): stop the work, then rejoin; `resetMemberId` says whether to join as a new member.
 * - `coordinator`: the coordinator moved, is loading, or cannot be reached: find it again, back off, retry.
 * - `fatal`: retrying cannot help (wrong group, not authorised, session timeout out of the broker's range).
 * - `unknown`: anything else: log it, back off, retry.
 */
export type GroupErrorKind = 'rebalance' | 'member-id-required' | 'lost' | 'coordinator' | 'fatal' | 'unknown';

/** The decision of {@link groupErrorKind}, with what it was decided from. */
export interface GroupErrorKindOf {
  readonly kind: GroupErrorKind;
  /** The Kafka error type (`REBALANCE_IN_PROGRESS`, ...) or kafkajs error name that decided it. */
  readonly type: string;
  /** `lost` only: the member must join as a new member (its id is unknown or fenced). */
  readonly resetMemberId: boolean;
  /** `member-id-required` only: the id the coordinator gave. */
  readonly memberId?: string;
}

const FATAL_TYPES = new Set([
  'INCONSISTENT_GROUP_PROTOCOL',
  'GROUP_AUTHORIZATION_FAILED',
  'INVALID_GROUP_ID',
  'INVALID_SESSION_TIMEOUT',
  'GROUP_MAX_SIZE_REACHED',
  'UNSUPPORTED_VERSION',
]);
const COORDINATOR_TYPES = new Set([
  'NOT_COORDINATOR_FOR_GROUP',
  'NOT_COORDINATOR',
  'GROUP_COORDINATOR_NOT_AVAILABLE',
  'COORDINATOR_NOT_AVAILABLE',
  'GROUP_LOAD_IN_PROGRESS',
  'COORDINATOR_LOAD_IN_PROGRESS',
  'REQUEST_TIMED_OUT',
  'NETWORK_EXCEPTION',
]);
const COORDINATOR_NAMES = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSGroupCoordinatorNotFound',
  'KafkaJSBrokerNotFound',
  'KafkaJSNoBrokerAvailableError',
  'KafkaJSMetadataNotLoaded',
  'KafkaJSLockTimeout',
  'KafkaJSNumberOfRetriesExceeded',
]);

/**
 * Classifies a group request's failure.
 *
 * @param e What the kafkajs request rejected with.
 * @returns The kind, and the type or name it was decided from.
 * @example
 * ```ts
 * const rebalancing = Object.assign(new Error('The group is rebalancing'), {
 *   name: 'KafkaJSProtocolError',
 *   type: 'REBALANCE_IN_PROGRESS',
 * });
 * console.log(groupErrorKind(rebalancing).kind); // 'rebalance'
 * ```
 */
export function groupErrorKind(e: unknown): GroupErrorKindOf {
  // The first Kafka error type along the cause chain decides (kafkajs's retrier wraps the
  // protocol error of its last attempt in KafkaJSNumberOfRetriesExceeded / KafkaJSNonRetriableError).
  const chain: unknown[] = [];
  for (let current: unknown = e, depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    chain.push(current);
    current = (current as { cause?: unknown }).cause;
  }
  for (const err of chain) {
    const { type, name, memberId } = err as { type?: unknown; name?: unknown; memberId?: unknown };
    if (name === 'KafkaJSMemberIdRequired' || type === 'MEMBER_ID_REQUIRED') {
      return {
        kind: 'member-id-required',
        type: 'MEMBER_ID_REQUIRED',
        resetMemberId: false,
        ...(typeof memberId === 'string' ? { memberId } : {}),
      };
    }
    if (typeof type !== 'string') continue;
    if (type === 'REBALANCE_IN_PROGRESS') return { kind: 'rebalance', type, resetMemberId: false };
    if (type === 'ILLEGAL_GENERATION') return { kind: 'lost', type, resetMemberId: false };
    if (type === 'UNKNOWN_MEMBER_ID' || type.startsWith('FENCED_')) return { kind: 'lost', type, resetMemberId: true };
    if (FATAL_TYPES.has(type)) return { kind: 'fatal', type, resetMemberId: false };
    if (COORDINATOR_TYPES.has(type)) return { kind: 'coordinator', type, resetMemberId: false };
    return { kind: 'unknown', type, resetMemberId: false };
  }
  for (const err of chain) {
    if (isKafkajsError(err) && COORDINATOR_NAMES.has(err.name)) {
      return { kind: 'coordinator', type: err.name, resetMemberId: false };
    }
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENOTFOUND)$/.test(code)) {
      return { kind: 'coordinator', type: code, resetMemberId: false };
    }
  }
  const name = (e as { name?: unknown } | null)?.name;
  return { kind: 'unknown', type: typeof name === 'string' ? name : typeof e, resetMemberId: false };
}

/**
 * How long to wait before retry number `attempt` (1 for the first retry): exponential from
 * `initialMs`, capped at `maxMs`, with ±20 % jitter so that workers that failed together do not
 * retry together.
 *
 * @param attempt 1, 2, 3 ...
 * @param random A source of numbers in [0, 1) (`Math.random` by default).
 * @example
 * ```ts
 * const ms = groupRetryDelay(3, { initialMs: 200, maxMs: 5000 }, () => 0.5); // 800
 * console.log(ms);
 * ```
 */
export function groupRetryDelay(
  attempt: number,
  limits: { readonly initialMs: number; readonly maxMs: number },
  random: () => number = Math.random,
): number {
  const exponent = Math.max(0, Math.min(attempt - 1, 30));
  const base = Math.min(limits.maxMs, limits.initialMs * 2 ** exponent);
  return Math.round(base * (0.8 + 0.4 * random()));
}
