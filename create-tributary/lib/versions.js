// @ts-check
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The versions a generated project depends on, pinned in one place: Tributary's root
 * package.json (its version, dependencies and devDependencies). `npm pack` writes them to
 * `versions.json` inside this package; from the repository they are read directly.
 * @returns {Record<string, string>}
 */
export function pinnedVersions() {
  const packed = fileURLToPath(new URL('../versions.json', import.meta.url));
  if (existsSync(packed)) return JSON.parse(readFileSync(packed, 'utf8'));
  const root = fileURLToPath(new URL('../../package.json', import.meta.url));
  return versionsOf(JSON.parse(readFileSync(root, 'utf8')));
}

/**
 * The pinned versions from Tributary's package.json: `tributary-connect` at its own version, plus every
 * dependency and devDependency at the version it pins.
 * @param {{ name: string, version: string, dependencies?: Record<string, string>, devDependencies?: Record<string, string> }} pkg
 * @returns {Record<string, string>}
 */
export function versionsOf(pkg) {
  return { ...pkg.devDependencies, ...pkg.dependencies, [pkg.name]: pkg.version };
}
