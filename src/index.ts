/**
 * Tributary: write Kafka source connectors in TypeScript.
 *
 * ```sh
 * npm install tributary-connect
 * ```
 *
 * ```ts
 * import { SourceConnector, SourceTask, offsetCodec, defineConfig, configTypes } from 'tributary-connect';
 * class MyTask extends SourceTask<MyPartition, MyOffset, MyTaskConfig> { ... }
 * class MyConnector extends SourceConnector<MyConfig, MyTaskConfig> { readonly taskClass = MyTask; ... }
 * ```
 *
 * Test tasks with `tributary-connect/testing`; run them with the `tributary` command.
 * @module
 */
export { BoundedBuffer, type BoundedBufferOptions } from './api/bounded-buffer.js';
export { canonicalJson } from './api/canonical-json.js';
export { type Clock, systemClock } from './api/clock.js';
export {
  type ConfigDef,
  type ConfigKey,
  type ConfigKeys,
  type ConfigOf,
  type ConfigProblem,
  type ConfigType,
  configTypes,
  defineConfig,
  type ParsedConfig,
} from './api/config-def.js';
export {
  ConfigError,
  ERROR_CODES,
  type ErrorCode,
  isTributaryError,
  OffsetDecodeError,
  TributaryError,
} from './api/errors.js';
export type { JsonObject, JsonValue } from './api/json.js';
export { type Logger, silentLogger } from './api/logger.js';
export type { OAuthBearerToken, OAuthBearerTokenProvider } from './api/oauth-bearer.js';
export {
  type Decoded,
  type DecodeOptions,
  decodeWith,
  type OffsetCodec,
  type OffsetOf,
  offsetCodec,
  type PartitionOf,
} from './api/offset-codec.js';
export { isRetriableError, RetriableError } from './api/retriable-error.js';
export {
  type ConnectorContext,
  isSourceConnectorClass,
  type OffsetChange,
  SourceConnector,
  type SourceConnectorClass,
} from './api/source-connector.js';
export type { HeaderValue, HeartbeatRecord, OffsetUpdate, SourceRecord } from './api/source-record.js';
export {
  isSourceTaskClass,
  type OffsetReader,
  type RecordAck,
  type SourceLag,
  SourceTask,
  type SourceTaskClass,
  type SourceTaskContext,
} from './api/source-task.js';
export type {
  ConnectorTransactionBoundaries,
  ExactlyOnceSupport,
  TransactionContext,
} from './api/transaction-context.js';
export {
  isPredicateClass,
  isTransformationClass,
  Predicate,
  type PredicateClass,
  type RecordHeader,
  Transformation,
  type TransformationClass,
  type TransformRecord,
} from './api/transformation.js';
