import type { TaskMetricsSnapshot } from '../runtime/task-metrics.js';

/** One task as the exporters see it at a scrape. */
export interface TaskView {
  readonly connector: string;
  readonly taskId: number;
  /** Kafka Connect's status name, lower case: running, paused, failed, unassigned, restarting. */
  readonly status: string;
  /** Undefined for a task whose runner has no metrics yet. */
  readonly metrics: TaskMetricsSnapshot | undefined;
}

/** One connector as the exporters see it at a scrape. */
export interface ConnectorView {
  readonly name: string;
  /** Lower case: running, paused, stopped, failed, unassigned, restarting. */
  readonly status: string;
  readonly connectorClass: string;
  readonly tasks: readonly TaskView[];
}

type Labels = Record<string, string>;

/** A metric of the table: its name, type, help and the values it has at a scrape. */
export interface MetricDefinition {
  readonly name: string;
  readonly type: 'counter' | 'gauge';
  readonly help: string;
  readonly labelNames: readonly string[];
  readonly values: (connectors: readonly ConnectorView[]) => Array<{ labels: Labels; value: number }>;
}

/** The task states Kafka Connect's task status metric and per-connector task counts know. */
export const TASK_STATUSES = ['running', 'paused', 'failed', 'unassigned', 'restarting', 'destroyed'] as const;

const TASK_LABELS = ['connector', 'task'] as const;

/** One value per task with metrics: `pick` returns undefined to leave a task out. */
function perTask(pick: (s: TaskMetricsSnapshot) => number | undefined): MetricDefinition['values'] {
  return (connectors) => {
    const out: Array<{ labels: Labels; value: number }> = [];
    for (const c of connectors) {
      for (const t of c.tasks) {
        if (t.metrics === undefined) continue;
        const value = pick(t.metrics);
        if (value !== undefined) out.push({ labels: { connector: t.connector, task: String(t.taskId) }, value });
      }
    }
    return out;
  };
}

function taskMetric(
  name: string,
  type: 'counter' | 'gauge',
  help: string,
  pick: (s: TaskMetricsSnapshot) => number | undefined,
): MetricDefinition {
  return { name, type, help, labelNames: TASK_LABELS, values: perTask(pick) };
}

const seconds = (ms: number | undefined) => (ms === undefined ? undefined : ms / 1000);

/**
 * Every metric Tributary exports, in the order of docs/metrics.md. Kafka Connect's metrics carry
 * the names the Strimzi JMX exporter rules give them, so existing dashboards and alerts work;
 * Tributary's own start with `tributary_`.
 */
export const METRICS: readonly MetricDefinition[] = [
  // Worker (connect-worker-metrics)
  {
    name: 'kafka_connect_worker_connector_count',
    type: 'gauge',
    help: 'The number of connectors run in this worker.',
    labelNames: [],
    values: (cs) => [{ labels: {}, value: cs.length }],
  },
  {
    name: 'kafka_connect_worker_task_count',
    type: 'gauge',
    help: 'The number of tasks run in this worker.',
    labelNames: [],
    values: (cs) => [{ labels: {}, value: cs.reduce((n, c) => n + c.tasks.length, 0) }],
  },
  ...TASK_STATUSES.map(
    (status): MetricDefinition => ({
      name: `kafka_connect_worker_connector_${status}_task_count`,
      type: 'gauge',
      help: `The number of ${status} tasks of the connector on this worker.`,
      labelNames: ['connector'],
      values: (cs) =>
        cs.map((c) => ({ labels: { connector: c.name }, value: c.tasks.filter((t) => t.status === status).length })),
    }),
  ),
  {
    name: 'kafka_connect_worker_connector_total_task_count',
    type: 'gauge',
    help: 'The number of tasks of the connector on this worker.',
    labelNames: ['connector'],
    values: (cs) => cs.map((c) => ({ labels: { connector: c.name }, value: c.tasks.length })),
  },
  // Connector (connector-metrics)
  {
    name: 'kafka_connect_connector_status',
    type: 'gauge',
    help: 'The status of the connector: 1 for the status it is in, as the label says.',
    labelNames: ['connector', 'status'],
    values: (cs) => cs.map((c) => ({ labels: { connector: c.name, status: c.status }, value: 1 })),
  },
  {
    name: 'kafka_connect_connector_connector_class',
    type: 'gauge',
    help: 'The connector class (connector.class as configured) as a label; always 1.',
    labelNames: ['connector', 'connector_class'],
    values: (cs) => cs.map((c) => ({ labels: { connector: c.name, connector_class: c.connectorClass }, value: 1 })),
  },
  {
    name: 'kafka_connect_connector_connector_type',
    type: 'gauge',
    help: 'The connector type as a label (always source); always 1.',
    labelNames: ['connector', 'connector_type'],
    values: (cs) => cs.map((c) => ({ labels: { connector: c.name, connector_type: 'source' }, value: 1 })),
  },
  // Task (connector-task-metrics)
  {
    name: 'kafka_connect_connector_task_status',
    type: 'gauge',
    help: 'The status of the task: 1 for the status it is in, as the label says.',
    labelNames: ['connector', 'task', 'status'],
    values: (cs) =>
      cs.flatMap((c) =>
        c.tasks.map((t) => ({ labels: { connector: t.connector, task: String(t.taskId), status: t.status }, value: 1 })),
      ),
  },
  taskMetric(
    'kafka_connect_connector_task_offset_commit_avg_time_ms',
    'gauge',
    'The mean time in milliseconds the task took to commit offsets (flushes that wrote), since it started.',
    (s) => s.offsetCommitAvgTimeMs,
  ),
  taskMetric(
    'kafka_connect_connector_task_offset_commit_max_time_ms',
    'gauge',
    'The longest time in milliseconds the task took to commit offsets, since it started.',
    (s) => s.offsetCommitMaxTimeMs,
  ),
  taskMetric(
    'kafka_connect_connector_task_offset_commit_success_percentage',
    'gauge',
    "The percentage of the task's offset commits that succeeded, since it started (0 before the first).",
    (s) => s.offsetCommitSuccessPercentage,
  ),
  taskMetric(
    'kafka_connect_connector_task_offset_commit_failure_percentage',
    'gauge',
    "The percentage of the task's offset commits that failed or timed out, since it started (0 before the first).",
    (s) => s.offsetCommitFailurePercentage,
  ),
  // Source task (source-task-metrics)
  taskMetric(
    'kafka_connect_source_task_source_record_poll_total',
    'counter',
    'The records poll() emitted (heartbeat records not included), since the task started.',
    (s) => s.pollTotal,
  ),
  taskMetric(
    'kafka_connect_source_task_source_record_write_total',
    'counter',
    'The data records written to Kafka (acknowledged), since the task started.',
    (s) => s.writeTotal,
  ),
  taskMetric(
    'kafka_connect_source_task_source_record_active_count',
    'gauge',
    'The records (data and heartbeat) sent and not yet acknowledged.',
    (s) => s.activeCount,
  ),
  taskMetric(
    'kafka_connect_source_task_poll_batch_avg_time_ms',
    'gauge',
    'The mean time in milliseconds of a poll round (from calling poll() to its completion), since the task started.',
    (s) => s.pollBatchAvgTimeMs,
  ),
  taskMetric(
    'kafka_connect_source_task_poll_batch_max_time_ms',
    'gauge',
    'The longest poll round in milliseconds, since the task started.',
    (s) => s.pollBatchMaxTimeMs,
  ),
  // Task errors (task-error-metrics)
  taskMetric(
    'kafka_connect_task_error_total_record_errors',
    'gauge',
    'The records that failed: could not be sent (invalid, or the sender gave up after its retries; each fails the task), or were skipped by errors.tolerance=all.',
    (s) => s.recordErrors + s.recordsSkipped,
  ),
  taskMetric(
    'kafka_connect_task_error_total_record_failures',
    'gauge',
    'The record processing failures; the same as total_record_errors (retries are not counted).',
    (s) => s.recordErrors + s.recordsSkipped,
  ),
  taskMetric(
    'kafka_connect_task_error_total_records_skipped',
    'gauge',
    'Records a transform or converter failed on that errors.tolerance=all skipped (their offsets commit).',
    (s) => s.recordsSkipped,
  ),
  taskMetric(
    'kafka_connect_task_error_total_errors_logged',
    'gauge',
    'The record errors that failed the task, each written to the log (records skipped by errors.tolerance=all are not counted here).',
    (s) => s.recordErrors,
  ),
  taskMetric(
    'kafka_connect_task_error_last_error_timestamp',
    'gauge',
    'Epoch milliseconds of the last record error, 0 when none.',
    (s) => s.lastErrorTimestamp,
  ),
  // Heartbeats
  taskMetric(
    'tributary_heartbeat_records_total',
    'counter',
    'Heartbeat records written to Kafka (acknowledged), since the task started.',
    (s) => s.heartbeatRecords,
  ),
  taskMetric(
    'tributary_heartbeat_last_timestamp_seconds',
    'gauge',
    'Epoch seconds at which the last heartbeat record was acknowledged; absent before the first.',
    (s) => seconds(s.heartbeatLastTimestamp),
  ),
  taskMetric(
    'tributary_heartbeat_ticks_total',
    'counter',
    'Heartbeat ticks that called produceHeartbeatRecords(), since the task started.',
    (s) => s.heartbeatTicks,
  ),
  taskMetric(
    'tributary_heartbeat_ticks_skipped_total',
    'counter',
    'Heartbeat ticks skipped because the previous produceHeartbeatRecords() call was still running.',
    (s) => s.heartbeatTicksSkipped,
  ),
  // Freshness
  taskMetric(
    'tributary_offset_age_seconds',
    'gauge',
    "Seconds since the task's committed offsets last advanced (since the task started, before they first did).",
    (s) => s.offsetAgeMs / 1000,
  ),
  {
    name: 'tributary_source_partition_offset_age_seconds',
    type: 'gauge',
    help: 'Seconds since the committed offset of one source partition last advanced, for the first metrics.partition.limit partitions of each task; source_partition="_other" is the oldest of the rest.',
    labelNames: ['connector', 'task', 'source_partition'],
    values: (cs) =>
      cs.flatMap((c) =>
        c.tasks.flatMap((t) => {
          const labels = (source_partition: string) => ({ connector: t.connector, task: String(t.taskId), source_partition });
          const own = (t.metrics?.partitions ?? []).map((p) => ({ labels: labels(p.partition), value: p.offsetAgeMs / 1000 }));
          const other = t.metrics?.otherPartitionsOffsetAgeMs;
          return other === undefined ? own : [...own, { labels: labels('_other'), value: other / 1000 }];
        }),
      ),
  },
  taskMetric(
    'tributary_source_partitions_untracked',
    'gauge',
    'Source partitions committed beyond metrics.partition.limit, which have no series of their own.',
    (s) => s.otherPartitions,
  ),
  taskMetric(
    'tributary_uncommitted_records',
    'gauge',
    'Records (data and heartbeat) acknowledged by Kafka whose offsets are not yet committed.',
    (s) => s.uncommittedRecords,
  ),
  taskMetric(
    'tributary_uncommitted_bytes',
    'gauge',
    'Key and value bytes of the records acknowledged whose offsets are not yet committed.',
    (s) => s.uncommittedBytes,
  ),
  taskMetric(
    'tributary_offset_flush_age_seconds',
    'gauge',
    'Seconds since the last successful offset flush; absent before the first.',
    (s) => seconds(s.sinceLastFlushMs),
  ),
  taskMetric(
    'tributary_offset_flush_failures_total',
    'counter',
    'Offset flushes that failed or timed out (their offsets go out with the next flush), since the task started.',
    (s) => s.flushFailures,
  ),
  {
    name: 'tributary_source_lag_position',
    type: 'gauge',
    help: "How far the task's committed offset is behind its source, as the task reports it (sourceLag()), in the unit the label names.",
    labelNames: ['connector', 'task', 'unit'],
    values: (cs) =>
      cs.flatMap((c) =>
        c.tasks.flatMap((t) => {
          const lag = t.metrics?.sourceLag;
          if (lag === undefined) return [];
          return [{ labels: { connector: t.connector, task: String(t.taskId), unit: lag.unit ?? 'bytes' }, value: lag.position }];
        }),
      ),
  },
  taskMetric(
    'tributary_source_lag_seconds',
    'gauge',
    'How far behind its source the task is in time, where the task reports it (sourceLag().timeMs).',
    (s) => seconds(s.sourceLag?.timeMs),
  ),
  taskMetric(
    'tributary_task_offset_stale',
    'gauge',
    '1 when the committed offset is older than offset.stale.threshold.ms while the source moved, else 0.',
    (s) => (s.stale ? 1 : 0),
  ),
];

/**
 * The seconds left until each watched key-store certificate's `notAfter` (negative once it is
 * past): the worker's Kafka clients' `ssl.keystore.*` and the REST listener's. Not in
 * {@link METRICS}: it is the worker's, not its connectors'.
 */
export const CERTIFICATE_EXPIRY_METRIC = {
  name: 'tributary_certificate_expiry_seconds',
  type: 'gauge',
  help: "Seconds until the notAfter of a certificate of a key store the worker presents (negative once past): store is the setting that names it, file its file (empty for inline PEM), subject the certificate's.",
  labelNames: ['store', 'file', 'subject'],
} as const;
