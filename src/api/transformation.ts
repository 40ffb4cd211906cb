import type { ConfigDef } from './config-def.js';

const TRANSFORMATION_BRAND = Symbol.for('tributary.transformation');
const PREDICATE_BRAND = Symbol.for('tributary.predicate');

/** One record header as transforms see it: Kafka Connect's headers are a list, and a key may repeat. */
export interface RecordHeader {
  readonly key: string;
  /** Text, bytes, or any value a transform put there (written as text by the runtime; see docs/transforms.md). */
  readonly value: unknown;
}

/**
 * A data record as a transform sees it: after `poll()`, before conversion (Kafka Connect's
 * schemaless `SourceRecord`). Where it came from (source partition and offset) is not part of
 * it: a transform cannot change what offset the record commits.
 */
export interface TransformRecord {
  readonly topic: string;
  /** Kafka partition; absent lets the producer's partitioner choose by key. */
  readonly kafkaPartition?: number | undefined;
  readonly key?: unknown;
  readonly value: unknown;
  /** In order; empty when the record has none. */
  readonly headers: readonly RecordHeader[];
  /** Milliseconds since the epoch; absent lets the producer stamp it. */
  readonly timestamp?: number | undefined;
}

/**
 * A single message transform (Kafka Connect's `Transformation`): changes, reroutes or drops
 * each data record between the task's `poll()` and conversion. Heartbeat records never go
 * through transforms.
 *
 * Configure one in a connector config with `transforms=<alias>` and
 * `transforms.<alias>.type=<class>`; every other `transforms.<alias>.*` key is parsed with
 * {@link Transformation.config} (prefix removed) and handed to {@link Transformation.configure}.
 * The class is named like `connector.class` (`./dist/mask.js#MaskEmail`, a package, or a
 * built-in's Kafka Connect class name). Each task gets its own instance.
 *
 * `apply` runs on the hot path: keep it synchronous and cheap. Throw a `RetriableError` for
 * a transient problem (the record is retried with back-off), any other error for a bad record
 * (`errors.tolerance` decides whether the task fails or skips it).
 *
 * @typeParam C - the decoded config, from {@link Transformation.config}
 *
 * @example
 * ```ts
 * import { configTypes, defineConfig } from 'tributary-connect';
 *
 * class UpperCaseTopic extends Transformation<{ prefix: string }> {
 *   readonly config = defineConfig({ prefix: { type: configTypes.string, default: '', description: 'Prefix to add.' } });
 *   private prefix = '';
 *   override configure(config: { prefix: string }) {
 *     this.prefix = config.prefix;
 *   }
 *   apply(record: TransformRecord): TransformRecord | null {
 *     return { ...record, topic: this.prefix + record.topic.toUpperCase() };
 *   }
 * }
 * ```
 */
export abstract class Transformation<C = any> {
  static readonly [TRANSFORMATION_BRAND] = true;

  /** The keys under `transforms.<alias>.` this transform reads. */
  abstract readonly config: ConfigDef<C>;
  /** Shown in logs and plugin listings. */
  readonly version: string = '0.0.0';

  /** Called once, before the first record, with the decoded config. Throw to reject the config. Default: nothing. */
  configure(_config: C): void {}

  /** The changed record, the same record, or `null` to drop it (its offset still commits). */
  abstract apply(record: TransformRecord): TransformRecord | null;

  /** Called when the task stops. Default: nothing. */
  close(): void {}
}

/**
 * A condition on records (Kafka Connect's `Predicate`): a transform with
 * `transforms.<alias>.predicate=<predicate alias>` applies only to records it matches
 * (with `transforms.<alias>.negate=true`, only to those it does not).
 *
 * Configure one with `predicates=<alias>` and `predicates.<alias>.type=<class>`; the other
 * `predicates.<alias>.*` keys are its config.
 *
 * @example
 * ```ts
 * import { defineConfig } from 'tributary-connect';
 *
 * class IsDelete extends Predicate<Record<string, never>> {
 *   readonly config = defineConfig({});
 *   test(record: TransformRecord): boolean {
 *     return (record.value as { op?: string } | null)?.op === 'd';
 *   }
 * }
 * ```
 */
export abstract class Predicate<C = any> {
  static readonly [PREDICATE_BRAND] = true;

  /** The keys under `predicates.<alias>.` this predicate reads. */
  abstract readonly config: ConfigDef<C>;
  readonly version: string = '0.0.0';

  /** Called once with the decoded config. Throw to reject the config. Default: nothing. */
  configure(_config: C): void {}

  /** Whether the record matches. */
  abstract test(record: TransformRecord): boolean;

  /** Called when the task stops. Default: nothing. */
  close(): void {}
}

/** A concrete transform class, as `transforms.<alias>.type` names it. */
export type TransformationClass<C = any> = new () => Transformation<C>;

/** A concrete predicate class, as `predicates.<alias>.type` names it. */
export type PredicateClass<C = any> = new () => Predicate<C>;

/** True for a class that extends `Transformation` from any copy of Tributary. */
export function isTransformationClass(value: unknown): value is TransformationClass {
  return typeof value === 'function' && (value as unknown as Record<symbol, unknown>)[TRANSFORMATION_BRAND] === true;
}

/** True for a class that extends `Predicate` from any copy of Tributary. */
export function isPredicateClass(value: unknown): value is PredicateClass {
  return typeof value === 'function' && (value as unknown as Record<symbol, unknown>)[PREDICATE_BRAND] === true;
}
