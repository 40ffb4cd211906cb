import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { TributaryError } from '../api/errors.js';
import { isSourceConnectorClass, type SourceConnectorClass } from '../api/source-connector.js';

/**
 * Loads the connector class a `connector.class` value names:
 * - `./path/to/module.js#ExportName` or `/abs/path.js#ExportName`: a module file and its export;
 * - `package-name#ExportName` or `@scope/pkg/subpath#ExportName`: an installed package;
 * - without `#`: the module's default export, or its only exported connector class.
 * Relative paths and packages resolve from `baseDir` (the working directory by default).
 */
export async function loadConnectorClass(spec: string, baseDir: string = process.cwd()): Promise<SourceConnectorClass> {
  const hash = spec.lastIndexOf('#');
  const moduleSpec = hash >= 0 ? spec.slice(0, hash) : spec;
  const exportName = hash >= 0 ? spec.slice(hash + 1) : undefined;
  const notFound = (why: string, cause?: unknown) =>
    new TributaryError(
      'PLUGIN_NOT_FOUND',
      `connector.class "${spec}" ${why}. Accepted: a module path or an installed package, optionally with #ExportName, e.g. ./dist/my-connector.js#MyConnector`,
      { cause },
    );
  let url: string;
  try {
    if (moduleSpec.startsWith('.') || isAbsolute(moduleSpec)) {
      url = pathToFileURL(isAbsolute(moduleSpec) ? moduleSpec : resolve(baseDir, moduleSpec)).href;
    } else {
      url = pathToFileURL(createRequire(join(baseDir, 'noop.js')).resolve(moduleSpec)).href;
    }
  } catch (e) {
    throw notFound(`cannot be resolved from ${baseDir}: ${(e as Error).message.split('\n')[0]}`, e);
  }
  let mod: Record<string, unknown>;
  try {
    mod = (await import(url)) as Record<string, unknown>;
  } catch (e) {
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
