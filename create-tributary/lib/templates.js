// @ts-check
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The templates, in prompt order; each is a folder of the same name in `templates/`.
 * @type {ReadonlyArray<{ name: string, description: string }>}
 */
export const TEMPLATES = [
  { name: 'basic-poll', description: 'a source that polls an API for items after a cursor' },
  { name: 'push-heartbeat', description: 'a push (CDC-style) source with a bounded buffer, heartbeats and acknowledgements' },
];

/** The SDK package every template depends on (`--tributary` replaces its version). */
export const SDK_PACKAGE = 'tributary-connect';

/** The template every prompt and `--yes` defaults to. */
export const DEFAULT_TEMPLATE = 'basic-poll';

/**
 * The folder holding the templates: `templates/` inside the package once packed (copied there
 * by `npm pack`), else the repository's top-level `templates/`.
 * @returns {string}
 */
export function templatesDir() {
  for (const candidate of ['../templates/', '../../templates/']) {
    const dir = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(dir)) return dir;
  }
  throw new Error('create-tributary: its templates folder is missing; reinstall create-tributary');
}

/**
 * The template of that name, or undefined.
 * @param {string} name
 */
export function findTemplate(name) {
  return TEMPLATES.find((t) => t.name === name);
}

/** The templates as lines for help and error messages. */
export function templateList() {
  return TEMPLATES.map((t) => `  ${t.name.padEnd(16)} ${t.description}`).join('\n');
}
