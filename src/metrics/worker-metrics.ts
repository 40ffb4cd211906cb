import { Counter, Gauge, Registry } from 'prom-client';
import { type Clock, systemClock } from '../api/clock.js';
import { configTypes, defineConfig } from '../api/config-def.js';
import { ConfigError } from '../api/errors.js';
import {
  CERTIFICATE_EXPIRY_WARNING_MS,
  type CertificateValidity,
  distinctCertificates,
} from '../runtime/certificate-validity.js';
import { TaskMetrics, type TaskMetricsSnapshot } from '../runtime/task-metrics.js';
import type { TaskListener } from '../runtime/task-runner.js';
import { timerProblems } from '../runtime/task-settings.js';
import type { TaskFreshness, Worker } from '../runtime/worker.js';
import { CERTIFICATE_EXPIRY_METRIC, type ConnectorView, METRICS, type TaskView } from './metric-table.js';
import { type MetricsListener, resolveMetricsListener } from './metrics-listener.js';

/** The worker config keys of metrics, with their defaults. */
export const metricsConfig = defineConfig({
  'metrics.listeners': {
    type: configTypes.string,
    default: '',
    description:
      "Where GET /metrics is served on a listener of its own (one http://host:port or https://host:port); empty (the default): on the REST API listener. https takes metrics.listeners.https.ssl.* (none given: the REST listener's listeners.https.ssl.*, else the worker's ssl.*).",
  },
  'metrics.basic.auth.user': {
    type: configTypes.string,
    default: '',
    description:
      'User name of HTTP basic authentication on the metrics listener of its own (metrics.listeners); with a password (or password file) every request must carry it.',
  },
  'metrics.basic.auth.password': {
    type: configTypes.string,
    default: '',
    password: true,
    description: 'Password of HTTP basic authentication on the metrics listener.',
  },
  'metrics.basic.auth.password.file': {
    type: configTypes.string,
    default: '',
    description:
      'File holding the password of HTTP basic authentication on the metrics listener (a trailing newline is ignored), instead of metrics.basic.auth.password.',
  },
  'metrics.partition.limit': {
    type: configTypes.nonNegativeInt,
    default: 20,
    description:
      'Source partitions per task that get offset-age series of their own; the rest are counted in tributary_source_partitions_untracked.',
  },
  'metrics.history.interval.ms': {
    type: configTypes.positiveInt,
    default: 10_000,
    description:
      'How often the status page (GET /ui) samples offset age, source lag and throughput for its charts of the last 360 samples, in milliseconds.',
  },
  'offset.stale.threshold.ms': {
    type: configTypes.nonNegativeInt,
    default: 0,
    description:
      'A task whose committed offset has not advanced for longer than this while its source moved is shown stale in its metrics and status page, and GET /health answers 500 unhealthy; 0 (the default) turns this off.',
  },
});

/** Metrics settings resolved from the worker config. */
export interface MetricsSettings {
  /** Empty: served on the REST listener. */
  readonly listeners: string;
  /** The listener of its own, resolved (TLS, basic auth); undefined when `listeners` is empty. */
  readonly listener: MetricsListener | undefined;
  readonly partitionLimit: number;
  readonly staleThresholdMs: number;
  readonly historyIntervalMs: number;
}

/** Resolves the metrics settings of a worker config; throws a {@link ConfigError} naming every bad key. */
export function resolveMetricsSettings(config: Readonly<Record<string, string>>): MetricsSettings {
  const parsed = metricsConfig.parse(config);
  const timers = parsed.ok ? timerProblems(parsed.value, { 'metrics.history.interval.ms': { min: 1 } }) : [];
  const problems = [...(parsed.ok ? [] : parsed.problems), ...timers].map((p) => p.message);
  // Checked here, before anything starts, not only when the listener opens after the worker started.
  const listener = resolveMetricsListener(config, problems);
  if (!parsed.ok || problems.length > 0) throw new ConfigError('metrics settings of the worker config', problems);
  return {
    listeners: parsed.value['metrics.listeners'].trim(),
    listener,
    partitionLimit: parsed.value['metrics.partition.limit'],
    staleThresholdMs: parsed.value['offset.stale.threshold.ms'],
    historyIntervalMs: parsed.value['metrics.history.interval.ms'],
  };
}

/** Options of {@link WorkerMetrics}. */
export interface WorkerMetricsOptions {
  readonly clock?: Clock;
  /** Source partitions per task with series of their own; default 20. */
  readonly partitionLimit?: number;
  /** `offset.stale.threshold.ms`; default 0 (off). */
  readonly staleThresholdMs?: number;
}

/**
 * The metrics of one worker, in a prom-client {@link Registry} of its own (never the global
 * one, so that several workers in one process, and tests, do not collide). Give the worker its
 * {@link taskListener}, then {@link attach} the worker; scrape with {@link text}.
 *
 * @example
 * ```ts
 * import { Worker, type WorkerOptions } from '../runtime/worker.js';
 *
 * declare const adapters: Pick<WorkerOptions, 'config' | 'offsetStore' | 'createSender'>;
 * const metrics = new WorkerMetrics();
 * const worker = new Worker({ ...adapters, taskListener: metrics.taskListener });
 * metrics.attach(worker);
 * // GET /metrics answers:
 * const body = await metrics.text();
 * ```
 */
export class WorkerMetrics {
  /** The registry every metric of this worker is in. */
  readonly registry = new Registry();
  private readonly tasks = new Map<string, TaskMetrics>();
  private worker: Worker | undefined;
  private readonly clock: Clock;
  private cached: ConnectorView[] | undefined;
  private watched: CertificateValidity[] = [];

  constructor(private readonly options: WorkerMetricsOptions = {}) {
    this.clock = options.clock ?? systemClock;
    registerMetrics(this.registry, () => this.view());
    const certificates = () => this.watched;
    const clock = this.clock;
    new Gauge({
      ...CERTIFICATE_EXPIRY_METRIC,
      labelNames: [...CERTIFICATE_EXPIRY_METRIC.labelNames],
      registers: [this.registry],
      collect() {
        this.reset();
        const now = clock.now();
        for (const c of certificates()) {
          this.set({ store: c.store, file: c.file, subject: c.subject }, Math.floor((c.notAfter - now) / 1000));
        }
      },
    });
  }

  /**
   * Watches the certificates of key stores the worker presents: their seconds left are
   * exported as `tributary_certificate_expiry_seconds`, and `GET /health` lists those within
   * 14 days of their `notAfter` (see {@link certificatesExpiring}). Adds to those watched already.
   */
  watchCertificates(certificates: Iterable<CertificateValidity>): void {
    this.watched = distinctCertificates([...this.watched, ...certificates]);
  }

  /** The time of this worker's metrics clock, epoch milliseconds. */
  now(): number {
    return this.clock.now();
  }

  /** The watched certificates that expire within `windowMs` (default 14 days) of now, or are past their `notAfter`, soonest first. */
  certificatesExpiring(windowMs: number = CERTIFICATE_EXPIRY_WARNING_MS): CertificateValidity[] {
    const now = this.clock.now();
    return this.watched.filter((c) => c.notAfter - now <= windowMs).sort((a, b) => a.notAfter - b.notAfter);
  }

  /**
   * For `WorkerOptions.taskListener`: instruments each task the worker starts (a restarted task
   * gets fresh figures, as in Kafka Connect).
   */
  readonly taskListener = (connector: string, taskId: number): TaskListener => {
    const metrics = new TaskMetrics({
      clock: this.clock,
      partitionLimit: this.options.partitionLimit ?? 20,
      staleThresholdMs: this.options.staleThresholdMs ?? 0,
    });
    this.tasks.set(taskKey(connector, taskId), metrics);
    return metrics;
  };

  /** For `WorkerOptions.taskFreshness`: the source lag and staleness a task's status shows. */
  readonly taskFreshness = (connector: string, taskId: number): TaskFreshness | undefined => {
    const s = this.tasks.get(taskKey(connector, taskId))?.snapshot();
    if (s === undefined) return undefined;
    return { ...(s.sourceLag ? { sourceLag: s.sourceLag } : {}), ...(s.stale ? { stale: true } : {}) };
  };

  /** The worker whose connectors and tasks are shown. */
  attach(worker: Worker): void {
    this.worker = worker;
  }

  /** The figures of one task now, or undefined when it has none. */
  task(connector: string, taskId: number): TaskMetricsSnapshot | undefined {
    return this.tasks.get(taskKey(connector, taskId))?.snapshot();
  }

  /**
   * Every connector and task with its figures, as the exporters see them. One scrape asks for
   * it once per metric, synchronously: it is computed once and kept until the next microtask.
   */
  view(): ConnectorView[] {
    if (this.cached) return this.cached;
    const view = this.computeView();
    this.cached = view;
    queueMicrotask(() => {
      this.cached = undefined;
    });
    return view;
  }

  private computeView(): ConnectorView[] {
    const worker = this.worker;
    if (worker === undefined) return [];
    const live = new Set<string>();
    const out: ConnectorView[] = [];
    for (const name of worker.connectorNames()) {
      const runner = worker.connector(name);
      if (runner === undefined) continue;
      const status = runner.status();
      const tasks: TaskView[] = status.tasks.map((t) => {
        const key = taskKey(name, t.id);
        live.add(key);
        return { connector: name, taskId: t.id, status: t.state.toLowerCase(), metrics: this.tasks.get(key)?.snapshot() };
      });
      out.push({
        name,
        status: status.connector.state.toLowerCase(),
        connectorClass: String(runner.config['connector.class'] ?? ''),
        tasks,
      });
    }
    // Tasks gone (connector deleted, fewer tasks after a reconfiguration) no longer show.
    for (const key of this.tasks.keys()) if (!live.has(key)) this.tasks.delete(key);
    return out;
  }

  /** The Prometheus text format of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** The content type of {@link text}. */
  get contentType(): string {
    return this.registry.contentType;
  }
}

function taskKey(connector: string, taskId: number): string {
  return `${connector}\u0000${taskId}`;
}

/**
 * Registers every metric of {@link METRICS} in `registry`, each read from `view` when
 * scraped (nothing is updated on the hot path: the figures are plain numbers in
 * {@link TaskMetrics}).
 */
export function registerMetrics(registry: Registry, view: () => readonly ConnectorView[]): void {
  for (const def of METRICS) {
    const common = { name: def.name, help: def.help, labelNames: [...def.labelNames], registers: [registry] };
    if (def.type === 'counter') {
      new Counter({
        ...common,
        collect() {
          this.reset();
          for (const { labels, value } of def.values(view())) this.inc(labels, value);
        },
      });
    } else {
      new Gauge({
        ...common,
        collect() {
          this.reset();
          for (const { labels, value } of def.values(view())) this.set(labels, value);
        },
      });
    }
  }
}
