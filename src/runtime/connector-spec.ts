import type { ConfigProblem } from '../api/config-def.js';
import { ConfigError } from '../api/errors.js';
import type { Logger } from '../api/logger.js';
import type { SourceConnectorClass } from '../api/source-connector.js';
import type { ConfigProviders } from './config-providers.js';
import { type ConfigReport, reportConnectorConfig, validateConnectorConfig } from './connector-config.js';
import type { ConfigValidation } from './herder.js';
import type { PluginAccess, PluginAccessPolicy } from './plugin-access.js';
import { hideResolved } from './secret-masking.js';
import { type AliasKeys, prepareTransforms, type TransformChainFactory } from './transform-chain.js';

/*
 * A connector config made ready to run: `${provider:...}` references resolved, `connector.class`
 * loaded as the caller's access allows, the config and its transforms validated; and the same
 * checks as a dry run for `config/validate`.
 */

/** What a connector config is prepared with: the worker's config, providers, plugins and client checks. */
export interface SpecSources {
  readonly workerConfig: Readonly<Record<string, string>>;
  readonly providers: ConfigProviders;
  readonly plugins: PluginAccessPolicy;
  /** Problems of a connector's client settings (`producer.override.*`), each naming its key. */
  readonly checkClientConfig?: ((connectorConfig: Readonly<Record<string, string>>) => ConfigProblem[]) | undefined;
  readonly log: Logger;
}

/** Everything a connector runs with, replaced as one by a config update. */
export interface ConnectorSpec {
  /** As given: `${provider:path:key}` references unresolved (what REST answers and logs show). */
  readonly config: Readonly<Record<string, string>>;
  /** With references resolved: what the connector, its tasks and the adapters get. */
  readonly resolved: Readonly<Record<string, string>>;
  /** Keys whose values came from a config provider: their resolved values are secrets. */
  readonly secrets: ReadonlySet<string>;
  readonly connectorClass: SourceConnectorClass;
  readonly parsed: unknown;
  readonly tasksMax: number;
  /** The keys declared as passwords: by the connector, and by its transforms and predicates (full names). */
  readonly passwords: ReadonlySet<string>;
  /** The connector's `version`. */
  readonly version: string;
  /** A fresh transform chain per task (`transforms=...`). */
  readonly transforms: TransformChainFactory;
}

/**
 * Resolves, loads and validates a connector config. `checkClients` (a create or an update)
 * adds {@link SpecSources.checkClientConfig}: a stored config placed or inspected is not
 * refused for what only its producer would refuse (its tasks fail at start, as before).
 */
export async function prepareConnectorSpec(
  sources: SpecSources,
  name: string,
  config: Readonly<Record<string, string>>,
  pluginAccess: PluginAccess,
  transformAccess: PluginAccess = pluginAccess,
  checkClients = false,
): Promise<ConnectorSpec> {
  const given: Record<string, string> = { ...config, name };
  const { config: full, referenced, problems: unresolved } = sources.providers.resolve(given);
  if (unresolved.length > 0)
    throw new ConfigError(
      `config of connector '${name}'`,
      unresolved.map((p) => p.message),
    );
  sources.plugins.checkCodeKeys(name, full, transformAccess);
  const connectorClass = await sources.plugins.loadClass(String(full['connector.class'] ?? ''), pluginAccess);
  const probe = new connectorClass();
  const validated = validateConnectorConfig(probe, full, sources.workerConfig, `connector '${name}'`);
  for (const w of validated.warnings) sources.log.warn({ event: 'config.unknown.key', connector: name, key: w.key }, w.message);
  const transforms = await prepareTransforms(full, sources.plugins.transformLoader(transformAccess));
  const clients = (checkClients && sources.checkClientConfig?.(full)) || [];
  // Error messages quote values: a resolved one must not reach the REST answer or the log.
  const hide = hideResolved(given, full, referenced);
  if (!validated.ok || !transforms.ok || clients.length > 0)
    throw new ConfigError(`config of connector '${name}'`, [
      ...(validated.ok ? [] : validated.problems.map((p) => hide(p.message))),
      ...(transforms.ok ? [] : transforms.problems.map((p) => hide(p.message))),
      ...clients.map((p) => hide(p.message)),
    ]);
  // A transform's or predicate's PASSWORD keys are secrets as the connector's own are, whatever their name.
  const passwords = new Set([...probe.config.passwords, ...aliasPasswords(transforms.aliases)]);
  return {
    config: given,
    resolved: full,
    secrets: new Set([...passwords, ...referenced]),
    connectorClass,
    parsed: validated.config,
    tasksMax: validated.tasksMax,
    passwords,
    version: String(probe.version),
    transforms: transforms.factory,
  };
}

/**
 * Validates a connector config without creating anything, key by key (for
 * `PUT /connector-plugins/{plugin}/config/validate`). The class is the config's
 * `connector.class`, else `plugin`, loaded as `pluginAccess` allows (default `any`).
 */
export async function validateConnectorRequest(
  sources: SpecSources,
  plugin: string,
  config: Readonly<Record<string, string>>,
  pluginAccess: PluginAccess,
): Promise<ConfigValidation> {
  const connectorClass = config['connector.class'] ?? plugin;
  const cls = await sources.plugins.loadClass(connectorClass, pluginAccess);
  const given: Record<string, string> = { 'connector.class': connectorClass, ...config };
  const { config: full, referenced, problems: unresolved } = sources.providers.resolve(given);
  const transforms = await prepareTransforms(full, sources.plugins.transformLoader(pluginAccess));
  const resolvedReport = reportConnectorConfig(new cls(), full, sources.workerConfig, transforms.aliases);
  // Values are shown as given: a resolved value from a config provider never leaves the worker.
  // Error messages quote values: a resolved one is hidden there too.
  const hide = hideResolved(given, full, referenced);
  const report: ConfigReport = {
    ...resolvedReport,
    keys: resolvedReport.keys.map((k) => ({
      ...k,
      ...(referenced.has(k.name) ? { value: given[k.name] } : {}),
      errors: k.errors.map(hide),
      warnings: k.warnings.map(hide),
    })),
  };
  const problems = [
    ...unresolved,
    ...(transforms.ok ? [] : transforms.problems.map((p) => ({ ...p, message: hide(p.message) }))),
    ...(sources.checkClientConfig?.(full) ?? []).map((p) => ({ ...p, message: hide(p.message) })),
  ];
  // Named as given (an alias stays an alias), as Kafka Connect names the answer: never the
  // module path the name resolved to.
  return { ...(problems.length === 0 ? report : withProblems(report, problems)), connectorClass };
}

/**
 * A task config with the `${provider:...}` form put back where a top-level key holds exactly
 * the resolved value of the connector key of that name (Kafka Connect's reverse transform).
 */
export function unresolve(taskConfig: unknown, spec: Pick<ConnectorSpec, 'config' | 'resolved'>): unknown {
  if (typeof taskConfig !== 'object' || taskConfig === null || Array.isArray(taskConfig)) return taskConfig;
  const out: Record<string, unknown> = { ...(taskConfig as Record<string, unknown>) };
  for (const [k, v] of Object.entries(out)) {
    const raw = spec.config[k];
    if (raw !== undefined && raw !== spec.resolved[k] && v === spec.resolved[k]) out[k] = raw;
  }
  return out;
}

/** The inverse of {@link unresolve}: a task config as the cluster stores it, with the references resolved again. */
export function resolveAgain(taskConfig: unknown, spec: Pick<ConnectorSpec, 'config' | 'resolved'>): unknown {
  if (typeof taskConfig !== 'object' || taskConfig === null || Array.isArray(taskConfig)) return taskConfig;
  const out: Record<string, unknown> = { ...(taskConfig as Record<string, unknown>) };
  for (const [k, v] of Object.entries(out)) {
    const raw = spec.config[k];
    const resolved = spec.resolved[k];
    if (raw !== undefined && resolved !== undefined && raw !== resolved && v === raw) out[k] = resolved;
  }
  return out;
}

/** The full names of the keys that transforms and predicates declare as passwords (`transforms.sign.token`). */
export function aliasPasswords(aliases: readonly AliasKeys[]): string[] {
  return aliases.flatMap((a) => a.keys.filter((k) => k.key.password === true).map((k) => k.name));
}

/** A config report with more problems attached to their keys (keys not in it are added). */
function withProblems(report: ConfigReport, problems: readonly ConfigProblem[]): ConfigReport {
  const keys = report.keys.map((k) => {
    const extra = problems.filter((p) => p.key === k.name).map((p) => p.message);
    return extra.length === 0 ? k : { ...k, errors: [...k.errors, ...extra] };
  });
  for (const p of problems) {
    if (keys.some((k) => k.name === p.key)) continue;
    keys.push({
      name: p.key,
      definition: undefined,
      group: undefined,
      defaultValue: undefined,
      value: undefined,
      secret: false,
      errors: problems.filter((q) => q.key === p.key).map((q) => q.message),
      warnings: [],
    });
  }
  return { keys, errorCount: report.errorCount + problems.length };
}

/**
 * The longest connector name, in characters (code points), that the worker takes: every REST
 * route addresses a name up to this length, however it is percent-encoded in the URL.
 */
export const MAX_CONNECTOR_NAME_LENGTH = 1000;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function checkName(name: string, config: Readonly<Record<string, string>>): void {
  const problems: string[] = [];
  if (name.trim() === '') problems.push('the connector name is empty: give a non-empty name');
  const length = [...name].length;
  if (length > MAX_CONNECTOR_NAME_LENGTH) {
    problems.push(
      `the connector name is ${length} characters long: give at most ${MAX_CONNECTOR_NAME_LENGTH}, so that every REST route can address it`,
    );
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) problems.push('the connector name contains control characters');
  // URL clients (fetch, browsers) drop a '.' or '..' path segment, even as %2E%2E: no route would see it.
  if (name === '.' || name === '..')
    problems.push(`the connector name is '${name}', which URLs take as a path step: give another name`);
  // A lone surrogate (JSON's "\ud800") has no UTF-8 form, so no URL can address the connector.
  if (LONE_SURROGATE.test(name)) {
    problems.push('the connector name contains a lone UTF-16 surrogate, which no URL can carry: give well-formed Unicode');
  }
  if (config.name !== undefined && config.name !== name) {
    problems.push(`Connector name configuration (${config.name}) doesn't match connector name in the URL (${name})`);
  }
  if (problems.length > 0) throw new ConfigError(`connector name '${name}'`, problems);
}
