import { ConfigError, TributaryError } from '../api/errors.js';
import type { Logger } from '../api/logger.js';
import type { SourceConnectorClass } from '../api/source-connector.js';
import { discoverPlugins, findPlugin, loadConnectorClass, type PluginDescriptor, pluginLocations } from './plugins.js';
import { moduleTransformLoader, type TransformPluginLoader } from './transform-chain.js';

/*
 * Which code a connector config may make this worker load, by who gives it: the whole "no
 * request loads code" policy. Every `connector.class`, `transforms.*.type`, `predicates.*.type`
 * and client override naming a module goes through a {@link PluginAccessPolicy} before anything
 * resolves or imports it.
 */

/**
 * What a `connector.class` value may name, by who gives it:
 * - `any`: any module path or installed package, loaded as given. For the operator: connector
 *   files on the command line, code that embeds the worker. The default.
 * - `listed`: only a plugin on the list the worker found at start ({@link Worker.plugins}:
 *   `plugin.path` and installed connector packages), by its class, export name or alias, or
 *   the `connector.class` of a connector the operator created. Anything else is PLUGIN_NOT_FOUND
 *   and is never resolved or imported. The REST API asks with this unless
 *   `rest.plugin.module.paths.enable=true`.
 */
export type PluginAccess = 'any' | 'listed';

/** Why a request may not name a module, in each refusal that says so. */
const MODULE_PATHS_OFF =
  'module paths in requests are off unless the worker config sets rest.plugin.module.paths.enable=true (see docs/rest.md)';

const TOKEN_PROVIDER = 'sasl.oauthbearer.token.provider';
/** Connector config keys whose value is a module a task imports (Kafka client overrides). */
const CODE_KEY = /^(producer|consumer|admin)\.override\.sasl\.oauthbearer\.token\.provider$/;

/** How a {@link PluginAccessPolicy} finds and loads code (defaults: the working directory and `plugin.path`). */
export interface PluginAccessOptions {
  /** The worker config (`plugin.path`, and the token providers it names itself). */
  readonly workerConfig: Readonly<Record<string, string>>;
  readonly loadConnector?: (spec: string) => Promise<SourceConnectorClass>;
  readonly listPlugins?: () => Promise<PluginDescriptor[]>;
  readonly loadTransform?: TransformPluginLoader;
  readonly log: Logger;
}

/**
 * The worker's plugins and what each {@link PluginAccess} may load of them. With `any` (the
 * operator) whatever is named is loaded, and remembered; with `listed` (a request) only a plugin
 * listed at start, or a class or module the operator named before, is loaded: anything else is
 * refused before it is resolved or imported.
 */
export class PluginAccessPolicy {
  private readonly loadConnector: (spec: string) => Promise<SourceConnectorClass>;
  private readonly listPlugins: () => Promise<PluginDescriptor[]>;
  private readonly loadTransform: TransformPluginLoader;
  /** The plugins found at start, which is all that `listed` access may load. */
  private pluginList: Promise<PluginDescriptor[]> | undefined;
  /** `connector.class` values the operator gave (`any` access), which `listed` access may name too. */
  private readonly operatorClasses = new Set<string>();
  /** Modules named by `transforms.*.type`, `predicates.*.type` or a token-provider override in a config loaded with `any` (the operator's): requests may name them again. */
  private readonly operatorModules = new Set<string>();
  /** Classes loaded by any `connector.class` (module paths too), with the first spec that loaded each. */
  private readonly loaded = new Map<SourceConnectorClass, string>();
  private readonly workerConfig: Readonly<Record<string, string>>;

  constructor(options: PluginAccessOptions) {
    this.workerConfig = options.workerConfig;
    const locations = pluginLocations(options.workerConfig);
    const load = options.loadConnector ?? ((spec) => loadConnectorClass(spec, locations));
    this.loadConnector = async (spec) => {
      const cls = await load(spec);
      if (!this.loaded.has(cls)) this.loaded.set(cls, spec);
      return cls;
    };
    this.listPlugins = options.listPlugins ?? (() => discoverPlugins(locations, options.log));
    this.loadTransform = options.loadTransform ?? moduleTransformLoader(locations.baseDir);
  }

  /**
   * The connector plugins this worker found in `plugin.path` and the installed packages, listed
   * once, at {@link Worker.start} (or at the first call after a listing that failed).
   */
  private listedPlugins(): Promise<PluginDescriptor[]> {
    this.pluginList ??= this.listPlugins().catch((e: unknown) => {
      this.pluginList = undefined;
      throw e;
    });
    return this.pluginList;
  }

  /**
   * The connector plugins this worker can load: those listed at start, and the classes it has
   * loaded by a module path the operator gave (`./dist/x.js#X`).
   */
  async plugins(): Promise<PluginDescriptor[]> {
    const found = [...(await this.listedPlugins())];
    const known = new Set(found.map((p) => p.connectorClass));
    for (const [connectorClass, className] of this.loaded) {
      if (known.has(connectorClass)) continue;
      let version = '0.0.0';
      try {
        version = new connectorClass().version;
      } catch {
        // A constructor that throws is reported when the connector is created, not here.
      }
      found.push({ className, version, connectorClass });
    }
    return found;
  }

  /**
   * Loads a `connector.class` value as `pluginAccess` allows. With `listed`, a name that is
   * not on the plugin list (nor a class the operator gave) is refused before anything
   * resolves or imports it: a name from a request must never run code of its choosing.
   */
  async loadClass(spec: string, pluginAccess: PluginAccess): Promise<SourceConnectorClass> {
    if (pluginAccess === 'any' || spec.trim() === '') {
      const cls = await this.loadConnector(spec);
      if (pluginAccess === 'any') this.operatorClasses.add(spec);
      return cls;
    }
    const listed = findPlugin(await this.plugins(), spec);
    if (listed) return listed.connectorClass;
    if (this.operatorClasses.has(spec)) return this.loadConnector(spec);
    throw new TributaryError(
      'PLUGIN_NOT_FOUND',
      `connector.class "${spec}" is not a plugin of this worker. A request may name a plugin listed by GET /connector-plugins (its class, export name or alias) or the connector.class of a connector file; ${MODULE_PATHS_OFF}`,
    );
  }

  /**
   * Client overrides that name a module to import (`producer.override.sasl.oauthbearer.token.provider`):
   * with `listed` only one the worker config names, or a connector config loaded with `any` named
   * before; anything else is refused before a task could import it.
   */
  checkCodeKeys(name: string, config: Readonly<Record<string, string>>, access: PluginAccess): void {
    for (const [key, value] of Object.entries(config)) {
      if (!CODE_KEY.test(key)) continue;
      if (access === 'any') {
        this.operatorModules.add(value);
        continue;
      }
      const fromWorker = Object.entries(this.workerConfig).some(([k, v]) => k.endsWith(TOKEN_PROVIDER) && v === value);
      if (fromWorker || this.operatorModules.has(value)) continue;
      throw new ConfigError(`config of connector '${name}'`, [
        `${key} names a module to load ("${value}"); a request may name only one the worker config or a connector file of this worker names: ${MODULE_PATHS_OFF}`,
      ]);
    }
  }

  /**
   * The loader of `transforms.*.type` and `predicates.*.type` values that are not built-ins, as
   * `pluginAccess` allows: with `listed` only a module the operator gave before (in a connector
   * file, or a config loaded with `any`); anything else is refused before it is resolved or
   * imported, as for `connector.class`.
   */
  transformLoader(pluginAccess: PluginAccess): TransformPluginLoader {
    return async (spec, kind) => {
      if (pluginAccess === 'any') {
        const loaded = await this.loadTransform(spec, kind);
        this.operatorModules.add(spec);
        return loaded;
      }
      if (this.operatorModules.has(spec)) return this.loadTransform(spec, kind);
      throw new Error(`is not a built-in ${kind} nor one a connector file of this worker uses; ${MODULE_PATHS_OFF}`);
    };
  }
}
