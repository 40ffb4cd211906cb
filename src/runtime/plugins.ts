import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { TributaryError } from '../api/errors.js';
import type { Logger } from '../api/logger.js';
import { isSourceConnectorClass, type SourceConnectorClass } from '../api/source-connector.js';

/** Where connector classes are looked for: the working directory's packages and `plugin.path`. */
export interface PluginLocations {
  /** Relative module paths and installed packages resolve from here. */
  readonly baseDir: string;
  /** Directories holding connector packages or module files (worker config `plugin.path`). */
  readonly pluginPath: readonly string[];
}

/** A connector class found by {@link discoverPlugins}. */
export interface PluginDescriptor {
  /** The `connector.class` value that loads it, e.g. `my-connectors#MyConnector` or `/plugins/x.js#XConnector`. */
  readonly className: string;
  /** The connector's `version`. */
  readonly version: string;
  readonly connectorClass: SourceConnectorClass;
}

/**
 * Resolves the plugin locations of a worker config once: `plugin.path` is a comma-separated
 * list of directories, relative ones taken from `baseDir`.
 */
export function pluginLocations(
  workerConfig: Readonly<Record<string, string>>,
  baseDir: string = process.cwd(),
): PluginLocations {
  const pluginPath = (workerConfig['plugin.path'] ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p.length > 0)
    .map((p) => resolve(baseDir, p));
  return { baseDir, pluginPath };
}

/**
 * Loads the connector class a `connector.class` value names:
 * - `./path/to/module.js#ExportName` or `/abs/path.js#ExportName`: a module file and its export;
 * - `package-name#ExportName` or `@scope/pkg/subpath#ExportName`: a package installed where
 *   `baseDir` resolves packages, or found in a `plugin.path` directory;
 * - without `#`: the module's default export, or its only exported connector class;
 * - a bare export name such as `MyConnector`: the one plugin found by {@link discoverPlugins}
 *   that exports a connector class of that name (as Kafka Connect accepts a simple class name).
 *
 * @param where - the working directory (default `process.cwd()`) or full {@link PluginLocations}
 */
export async function loadConnectorClass(
  spec: string,
  where: string | PluginLocations = process.cwd(),
): Promise<SourceConnectorClass> {
  const locations = typeof where === 'string' ? { baseDir: where, pluginPath: [] } : where;
  const hash = spec.lastIndexOf('#');
  const moduleSpec = hash >= 0 ? spec.slice(0, hash) : spec;
  const exportName = hash >= 0 ? spec.slice(hash + 1) : undefined;
  const notFound = (why: string, cause?: unknown) =>
    new TributaryError(
      'PLUGIN_NOT_FOUND',
      `connector.class "${spec}" ${why}. Accepted: a module path or an installed package, optionally with #ExportName, e.g. ./dist/my-connector.js#MyConnector, a package in plugin.path, or the export name of a connector listed by GET /connector-plugins`,
      { cause },
    );
  if (moduleSpec.trim() === '') throw notFound('is empty');
  let url: string;
  try {
    url = resolveModule(moduleSpec, locations);
  } catch (e) {
    if (exportName === undefined && /^[A-Za-z_$][\w$]*$/.test(spec)) {
      const matches = (await discoverPlugins(locations)).filter((p) => p.className.endsWith(`#${spec}`));
      if (matches.length === 1) return (matches[0] as PluginDescriptor).connectorClass;
      if (matches.length > 1)
        throw notFound(`is ambiguous: ${matches.map((m) => m.className).join(', ')} all export it; give one of them`);
    }
    const where = [locations.baseDir, ...locations.pluginPath].join(', ');
    throw notFound(`cannot be resolved from ${where}: ${(e as Error).message.split('\n')[0]}`, e);
  }
  let mod: Record<string, unknown>;
  try {
    mod = (await import(url)) as Record<string, unknown>;
  } catch (e) {
    if ((e as { code?: unknown }).code === 'ERR_UNKNOWN_FILE_EXTENSION' && /\.[cm]?tsx?$/.test(moduleSpec)) {
      throw new TributaryError(
        'PLUGIN_NOT_FOUND',
        `connector.class "${spec}" is a TypeScript file, which Node cannot load by itself: build it and name the built .js file (e.g. npm run build, then ./dist/index.js#MyConnector), or run the worker through tsx (npx tsx node_modules/tributary-connect/dist/cli/main.js standalone ...)`,
        { cause: e },
      );
    }
    throw notFound(`failed to load: ${(e as Error).message}`, e);
  }
  if (exportName !== undefined) {
    const found = mod[exportName];
    if (isSourceConnectorClass(found)) return found;
    throw notFound(
      found === undefined ? `has no export "${exportName}"` : `export "${exportName}" is not a SourceConnector class`,
    );
  }
  if (isSourceConnectorClass(mod.default)) return mod.default;
  const candidates = Object.entries(mod).filter(([, v]) => isSourceConnectorClass(v));
  if (candidates.length === 1) return candidates[0]?.[1] as SourceConnectorClass;
  throw notFound(
    candidates.length === 0
      ? 'exports no SourceConnector class'
      : `exports several SourceConnector classes (${candidates.map(([k]) => k).join(', ')}); name one with #ExportName`,
  );
}

/**
 * Finds the connector classes this worker can load (for `GET /connector-plugins`):
 * - in `baseDir`'s `node_modules` (and those above it): packages that declare the keyword
 *   `tributary-connector` or depend on `tributary-connect`;
 * - in each `plugin.path` directory: the directory itself if it is a package; every package
 *   directory in it; packages in its `node_modules` that pass the test above; and its
 *   `.js`/`.mjs`/`.cjs` files.
 *
 * Every exported `SourceConnector` class of those modules is listed once, under the
 * `connector.class` value that loads it. Modules that fail to load are skipped (and logged).
 */
export async function discoverPlugins(locations: PluginLocations, logger?: Logger): Promise<PluginDescriptor[]> {
  const candidates = new Map<string, string>(); // spec -> module URL
  const addPackage = (dir: string, filtered: boolean) => {
    const pkg = readPackageJson(dir);
    if (!pkg || typeof pkg.name !== 'string') return;
    if (filtered && !declaresConnectors(pkg)) return;
    const entry = packageEntry(dir, '.');
    if (entry && !candidates.has(pkg.name)) candidates.set(pkg.name, pathToFileURL(entry).href);
  };
  const scanNodeModules = (dir: string) => {
    for (const name of listDir(dir)) {
      if (name.startsWith('.')) continue;
      if (name.startsWith('@')) for (const sub of listDir(join(dir, name))) addPackage(join(dir, name, sub), true);
      else addPackage(join(dir, name), true);
    }
  };
  for (let dir = locations.baseDir; ; dir = dirname(dir)) {
    scanNodeModules(join(dir, 'node_modules'));
    if (dirname(dir) === dir) break;
  }
  for (const root of locations.pluginPath) {
    if (readPackageJson(root)) {
      addPackage(root, false);
      continue;
    }
    for (const name of listDir(root)) {
      const path = join(root, name);
      if (name === 'node_modules') scanNodeModules(path);
      else if (isDirectory(path)) addPackage(path, false);
      else if (['.js', '.mjs', '.cjs'].includes(extname(name))) candidates.set(path, pathToFileURL(path).href);
    }
  }
  const found: PluginDescriptor[] = [];
  const seen = new Set<unknown>();
  for (const [spec, url] of candidates) {
    let mod: Record<string, unknown>;
    try {
      mod = (await import(url)) as Record<string, unknown>;
    } catch (err) {
      logger?.warn({ event: 'plugin.load.failed', plugin: spec, err }, `plugin ${spec} failed to load; skipped`);
      continue;
    }
    for (const [exportName, value] of Object.entries(mod)) {
      if (!isSourceConnectorClass(value) || seen.has(value)) continue;
      seen.add(value);
      found.push({ className: `${spec}#${exportName}`, version: versionOf(value), connectorClass: value });
    }
  }
  return found.sort((a, b) => a.className.localeCompare(b.className));
}

/**
 * The plugin of `plugins` (as {@link discoverPlugins} lists them) that a name stands for: its
 * exact `connector.class` value (`module#Export`); the module alone for its default export or
 * its only connector class (`pkg-conn` for `pkg-conn#default`); its export name
 * (`OrdersConnector`); or its alias, the
 * export name without a trailing `Connector` (`Orders`), as Kafka Connect takes a class's
 * simple name or alias. Never resolves or imports anything.
 *
 * @returns the plugin, or undefined when the name is not on the list
 * @throws TributaryError PLUGIN_NOT_FOUND when a short name fits several plugins
 *
 * @example
 * ```ts
 * const plugins = await discoverPlugins(pluginLocations({ 'plugin.path': './plugins' }));
 * const orders = findPlugin(plugins, 'Orders'); // e.g. the plugin 'orders-connector#OrdersConnector'
 * ```
 */
export function findPlugin(plugins: readonly PluginDescriptor[], name: string): PluginDescriptor | undefined {
  const exact = plugins.find((p) => p.className === name || p.className === `${name}#default`);
  if (exact) return exact;
  const hash = (p: PluginDescriptor) => p.className.lastIndexOf('#');
  const exportOf = (p: PluginDescriptor) => p.className.slice(hash(p) + 1);
  // The module alone, as loadConnectorClass takes it: its only connector class.
  const ofModule = plugins.filter((p) => p.className.slice(0, hash(p)) === name);
  const matches =
    ofModule.length > 0
      ? ofModule
      : plugins.filter((p) => exportOf(p) !== 'default' && [name, `${name}Connector`].includes(exportOf(p)));
  if (matches.length > 1) {
    throw new TributaryError(
      'PLUGIN_NOT_FOUND',
      `connector.class "${name}" is ambiguous: ${matches.map((m) => m.className).join(', ')} all fit it; give one of them`,
    );
  }
  return matches[0];
}

function versionOf(connectorClass: SourceConnectorClass): string {
  try {
    return String(new connectorClass().version);
  } catch {
    return 'unknown';
  }
}

/** A module specifier to the URL to import, trying Node's resolution, then package directories. */
function resolveModule(moduleSpec: string, locations: PluginLocations): string {
  if (moduleSpec.startsWith('.') || isAbsolute(moduleSpec)) {
    return pathToFileURL(isAbsolute(moduleSpec) ? moduleSpec : resolve(locations.baseDir, moduleSpec)).href;
  }
  const { name, subpath } = splitPackageSpec(moduleSpec);
  const dirs: string[] = [];
  for (let dir = locations.baseDir; ; dir = dirname(dir)) {
    dirs.push(join(dir, 'node_modules', name));
    if (dirname(dir) === dir) break;
  }
  for (const root of locations.pluginPath) {
    if (readPackageJson(root)?.name === name) dirs.push(root);
    dirs.push(join(root, name), join(root, 'node_modules', name));
  }
  let nodeError: unknown;
  try {
    return pathToFileURL(createRequire(join(locations.baseDir, 'noop.js')).resolve(moduleSpec)).href;
  } catch (e) {
    nodeError = e;
  }
  for (const dir of dirs) {
    const entry = readPackageJson(dir)?.name === name ? packageEntry(dir, subpath) : undefined;
    if (entry) return pathToFileURL(entry).href;
  }
  throw nodeError;
}

function splitPackageSpec(spec: string): { name: string; subpath: string } {
  const parts = spec.split('/');
  const nameParts = spec.startsWith('@') ? 2 : 1;
  const rest = parts.slice(nameParts).join('/');
  return { name: parts.slice(0, nameParts).join('/'), subpath: rest ? `./${rest}` : '.' };
}

type PackageJson = Record<string, unknown> & { name?: unknown };

function readPackageJson(dir: string): PackageJson | undefined {
  try {
    const parsed: unknown = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    return typeof parsed === 'object' && parsed !== null ? (parsed as PackageJson) : undefined;
  } catch {
    return undefined;
  }
}

function declaresConnectors(pkg: PackageJson): boolean {
  const keywords = Array.isArray(pkg.keywords) ? pkg.keywords : [];
  const deps = [pkg.dependencies, pkg.peerDependencies].filter(
    (d): d is Record<string, unknown> => typeof d === 'object' && d !== null,
  );
  return keywords.includes('tributary-connector') || deps.some((d) => 'tributary-connect' in d);
}

/** The file a package subpath (`.` or `./x`) points to: `exports` (import, node, default), else module/main. */
function packageEntry(dir: string, subpath: string): string | undefined {
  const pkg = readPackageJson(dir);
  if (!pkg) return undefined;
  const exportsField = pkg.exports;
  let target: unknown;
  if (exportsField !== undefined) {
    const isSubpathMap =
      typeof exportsField === 'object' && exportsField !== null && Object.keys(exportsField).some((k) => k.startsWith('.'));
    target = isSubpathMap ? (exportsField as Record<string, unknown>)[subpath] : subpath === '.' ? exportsField : undefined;
    target = pickCondition(target);
  } else if (subpath === '.') {
    target = typeof pkg.module === 'string' ? pkg.module : typeof pkg.main === 'string' ? pkg.main : 'index.js';
  } else {
    target = subpath;
  }
  if (typeof target !== 'string') return undefined;
  const file = resolve(dir, target);
  if (existsSync(file) && !isDirectory(file)) return file;
  for (const candidate of [`${file}.js`, join(file, 'index.js')]) if (existsSync(candidate)) return candidate;
  return undefined;
}

function pickCondition(target: unknown): unknown {
  if (Array.isArray(target)) return pickCondition(target[0]);
  if (typeof target !== 'object' || target === null) return target;
  const conditions = target as Record<string, unknown>;
  for (const c of ['import', 'node', 'default', 'require']) if (c in conditions) return pickCondition(conditions[c]);
  return undefined;
}

function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
