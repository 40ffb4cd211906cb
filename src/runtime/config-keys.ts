/**
 * Which config keys are known, and what to say about the others: a key one or two edits from
 * a known key is a typo (an error with "did you mean"), a connector setting in the worker file
 * is an error that says where it belongs, a Kafka Connect key Tributary does not implement is
 * a warning, any other key is a warning as Kafka Connect's "was supplied but isn't a known
 * config".
 *
 * Each module that reads keys exports its list ({@link KnownKeys}); the CLI concatenates them
 * (see {@link mergeKnownKeys}) so adding a setting means adding it to its module's list.
 */

/** Keys some module reads: exact names and prefixes it owns (`producer.` owns `producer.linger.ms`). */
export interface KnownKeys {
  readonly keys: readonly string[];
  readonly prefixes: readonly string[];
  /** Kafka Connect keys that Tributary accepts but does not implement (warned about, never typos). */
  readonly unsupported: readonly string[];
}

/** The union of several {@link KnownKeys} lists. */
export function mergeKnownKeys(...lists: ReadonlyArray<Partial<KnownKeys>>): KnownKeys {
  return {
    keys: [...new Set(lists.flatMap((l) => l.keys ?? []))],
    prefixes: [...new Set(lists.flatMap((l) => l.prefixes ?? []))],
    unsupported: [...new Set(lists.flatMap((l) => l.unsupported ?? []))],
  };
}

/**
 * Connector config keys the runtime owns beside the connector's own declaration (the runtime's
 * exact keys come from its config definitions; these are the prefixes and Kafka Connect's
 * connector keys).
 */
export const CONNECTOR_RUNTIME_KEYS: KnownKeys = {
  keys: ['key.converter.schemas.enable', 'value.converter.schemas.enable', 'transforms', 'predicates'],
  // No converter prefix: the converters' settings are the exact keys above; any other is a
  // warning (or, a near miss, an error), not taken quietly as a setting nothing reads.
  prefixes: ['producer.override.', 'topic.creation.', 'transforms.', 'predicates.'],
  unsupported: [
    'header.converter',
    // The errors.* keys the runtime reads are exact keys (task-settings.ts); these are a sink's.
    'errors.deadletterqueue.topic.name',
    'errors.deadletterqueue.topic.replication.factor',
    'errors.deadletterqueue.context.headers.enable',
    'config.action.reload',
    // KIP-891 version pins: Tributary loads the one version installed.
    'connector.plugin.version',
    'header.converter.plugin.version',
    // Settings of Kafka Connect's converters that Tributary's do not have (UTF-8 text, JSON
    // without schemas, bytes as they are).
    ...['key', 'value'].flatMap((side) =>
      ['converter.encoding', 'decimal.format', 'schemas.cache.size', 'replace.null.with.default', 'plugin.version'].map(
        (k) => `${side}.converter.${k}`,
      ),
    ),
  ],
};

/** Kafka Connect worker keys Tributary's standalone worker accepts without implementing them. */
export const KAFKA_CONNECT_WORKER_KEYS: KnownKeys = {
  // Implemented: config providers (config-providers.ts), KIP-558 topic tracking (worker.ts).
  keys: ['config.providers', 'topic.tracking.enable', 'topic.tracking.allow.reset'],
  prefixes: ['consumer.', 'admin.', 'config.providers.', 'key.converter.', 'value.converter.', 'header.converter.'],
  unsupported: [
    'group.id',
    'config.storage.topic',
    'config.storage.replication.factor',
    'status.storage.topic',
    'status.storage.partitions',
    'status.storage.replication.factor',
    'header.converter',
    'connect.protocol',
    'session.timeout.ms',
    'rebalance.timeout.ms',
    'scheduled.rebalance.max.delay.ms',
    'worker.sync.timeout.ms',
    'worker.unsync.backoff.ms',
    'admin.listeners',
    'rest.extension.classes',
    'response.http.headers.config',
    'metric.reporters',
    'metrics.num.samples',
    'metrics.sample.window.ms',
    'metrics.recording.level',
    'auto.include.jmx.reporter',
    'client.dns.lookup',
    'connections.max.idle.ms',
    'receive.buffer.bytes',
    'send.buffer.bytes',
    'request.timeout.ms',
    'reconnect.backoff.ms',
    'reconnect.backoff.max.ms',
    'retry.backoff.ms',
    'metadata.max.age.ms',
    'internal.key.converter',
    'internal.value.converter',
    'plugin.discovery',
    'offset.storage.file.filename.sync',
  ],
};

/** The most edits between a given key and a known key for the given key to count as its typo. */
export function maxTypoEdits(known: string): number {
  // Short keys are a few edits from many unrelated words (`name` - `game`), so only longer
  // keys get the benefit of the doubt.
  if (known.length < 5) return 0;
  if (known.length < 10) return 1;
  return 2;
}

/**
 * Edit distance with adjacent transpositions (optimal string alignment): `tabel` is one edit
 * from `table`. Stops early and returns `limit + 1` once the distance exceeds `limit`.
 */
export function editDistance(a: string, b: string, limit = Number.POSITIVE_INFINITY): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let prevPrev: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, (prevPrev[j - 2] as number) + 1);
      row.push(d);
      if (d < rowMin) rowMin = d;
    }
    if (rowMin > limit) return limit + 1;
    prevPrev = prev;
    prev = row;
  }
  return prev[b.length] as number;
}

/**
 * The known key that `key` is probably a typo of, or undefined. A candidate counts when it is
 * within {@link maxTypoEdits} of `key`; the closest wins, the first listed on a tie. A typo in
 * a prefix (`producer.overide.linger.ms`) suggests the key under the right prefix.
 */
export function probableKey(key: string, known: Pick<KnownKeys, 'keys' | 'prefixes'>): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  const consider = (candidate: string, compared: string, against: string) => {
    if (compared === against) return;
    const limit = maxTypoEdits(against);
    if (limit === 0) return;
    const d = editDistance(compared, against, limit);
    if (d <= limit && d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  };
  for (const k of known.keys) consider(k, key, k);
  // A key under a known prefix (`ssl.truststore.location`) is no typo of another (`sasl.`).
  if (known.prefixes.some((p) => key.startsWith(p))) return best;
  for (const prefix of known.prefixes) {
    if (!prefix.endsWith('.')) continue;
    // The given key's own prefixes of about the same length, cut at a dot.
    for (let end = key.indexOf('.'); end !== -1; end = key.indexOf('.', end + 1)) {
      const head = key.slice(0, end + 1);
      const rest = key.slice(end + 1);
      if (rest === '' || Math.abs(head.length - prefix.length) > 2) continue;
      consider(prefix + rest, head, prefix);
    }
  }
  return best;
}

/** Whether `key` is one of the known keys or under one of the known prefixes. */
export function isKnownKey(key: string, known: KnownKeys): boolean {
  return (
    known.keys.includes(key) ||
    known.unsupported.includes(key) ||
    known.prefixes.some((p) => (p.endsWith('.') ? key.startsWith(p) && key.length > p.length : key === p))
  );
}

/** What {@link checkKeys} found: errors (typos, misplaced keys) and warnings (unknown or unsupported keys). */
export interface KeyCheck {
  readonly errors: ReadonlyArray<{ readonly key: string; readonly message: string }>;
  readonly warnings: ReadonlyArray<{ readonly key: string; readonly message: string }>;
}

/** Options of {@link checkKeys}. */
export interface CheckKeysOptions {
  /** Where the keys come from, for warnings (errors go into an error that names it): `worker config worker.properties`. */
  readonly where: string;
  /** Keys that belong elsewhere, with where they belong: `heartbeat.interval.ms` -> `the connector config`. */
  readonly misplaced?: Readonly<Record<string, string>>;
}

/**
 * Sorts the keys of a config into known, typos, misplaced and unknown.
 *
 * - A known key (exact, or under an owned prefix) passes; a near miss of a known exact key is
 *   still a typo when it only happens to sit under a prefix.
 * - A key of `misplaced` is an error that says where it belongs; so is a typo of one.
 * - A key within {@link maxTypoEdits} of a known key is an error naming the key it probably meant.
 * - A Kafka Connect key Tributary does not implement is a warning that it is ignored.
 * - Any other key is a warning, as Kafka Connect's "was supplied but isn't a known config".
 *
 * @example
 * ```ts
 * import { checkKeys } from 'tributary-connect/runtime';
 *
 * const check = checkKeys(
 *   { 'heartbeat.intervall.ms': '500' },
 *   { keys: ['heartbeat.interval.ms'], prefixes: [], unsupported: [] },
 *   { where: 'connector config pg.properties' },
 * );
 * check.errors[0]?.message; // 'unknown key "heartbeat.intervall.ms"; did you mean "heartbeat.interval.ms"?'
 * ```
 */
export function checkKeys(config: Readonly<Record<string, unknown>>, known: KnownKeys, options: CheckKeysOptions): KeyCheck {
  const errors: Array<{ key: string; message: string }> = [];
  const warnings: Array<{ key: string; message: string }> = [];
  const misplaced = options.misplaced ?? {};
  const misplacedKeys = Object.keys(misplaced);
  const exact = [...known.keys, ...known.unsupported];
  for (const key of Object.keys(config)) {
    // Own keys only: `constructor` or `__proto__` must not find Object.prototype's.
    const belongs = Object.hasOwn(misplaced, key) ? misplaced[key] : undefined;
    if (belongs !== undefined) {
      errors.push({ key, message: `"${key}" is not a setting here; it belongs in ${belongs}` });
      continue;
    }
    if (exact.includes(key)) {
      if (known.unsupported.includes(key)) {
        warnings.push({
          key,
          message: `${options.where}: "${key}" is a Kafka Connect setting that Tributary does not implement; it is ignored`,
        });
      }
      continue;
    }
    const meant = probableKey(key, { keys: [...exact, ...misplacedKeys], prefixes: known.prefixes });
    if (meant !== undefined) {
      const elsewhere = Object.hasOwn(misplaced, meant) ? misplaced[meant] : undefined;
      errors.push({
        key,
        message: `unknown key "${key}"; did you mean "${meant}"?${elsewhere ? ` (it belongs in ${elsewhere})` : ''}`,
      });
      continue;
    }
    if (isKnownKey(key, known)) continue;
    warnings.push({ key, message: `${options.where}: "${key}" was supplied but isn't a known config; it is ignored` });
  }
  return { errors, warnings };
}
