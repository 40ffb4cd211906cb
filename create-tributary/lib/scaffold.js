// @ts-check
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { findTemplate, templateList, templatesDir } from './templates.js';
import { UsageError } from './usage-error.js';
import { folderOf, invalidNameReason } from './validate-name.js';
import { pinnedVersions } from './versions.js';

/** Files stored under another name in a template, because npm would drop or act on them. */
const RENAMES = /** @type {Record<string, string>} */ ({ _gitignore: '.gitignore', _npmrc: '.npmrc' });

/** Files whose `{{name}}` is replaced by the project name. */
const TEXT_WITH_NAME = /\.(md|properties|ts|json)$/;

/**
 * @typedef {object} ScaffoldOptions
 * @property {string} name - the project's package name; also its folder (without a scope)
 * @property {string} template - a template name, see TEMPLATES
 * @property {string} cwd - where the project folder is created
 * @property {string} [folder] - the project folder, relative to cwd (`.` for cwd itself); default: the name without its scope
 * @property {Record<string, string>} [versions] - pinned versions; default pinnedVersions()
 */

/**
 * Checks that a project can be written to `target`: it does not exist, or is an empty folder.
 * Throws a UsageError saying what to do otherwise. Called before anything is asked.
 * @param {string} target
 * @returns {Promise<void>}
 */
export async function checkTarget(target) {
  const existing = await readdir(target).catch((/** @type {NodeJS.ErrnoException} */ e) => {
    if (e.code === 'ENOENT') return [];
    if (e.code === 'ENOTDIR') throw new UsageError(`${target} exists and is not a folder: choose another project name.`);
    throw e;
  });
  if (existing.length > 0) {
    throw new UsageError(
      `Folder ${target} exists and is not empty: choose another project name, remove the folder, or run in an empty folder with "." as the name.`,
    );
  }
}

/**
 * Writes a new project: the template's files (dotfiles renamed, `{{name}}` replaced), and its
 * package.json with the project name and every dependency at its pinned version. The folder
 * must not exist or be empty. Bad input throws a UsageError saying what is accepted.
 * @param {ScaffoldOptions} options
 * @returns {Promise<string>} the project folder
 */
export async function scaffold({ name, template, cwd, folder, versions = pinnedVersions() }) {
  const bad = invalidNameReason(name);
  if (bad) throw new UsageError(`Invalid project name "${name}": ${bad}.`);
  if (!findTemplate(template)) {
    throw new UsageError(`Unknown template "${template}". Accepted templates:\n${templateList()}`);
  }
  const target = resolve(cwd, folder ?? folderOf(name));
  await checkTarget(target);
  await copyTemplate(join(templatesDir(), template), target, name);
  const pkgPath = join(target, 'package.json');
  const pkg = JSON.parse(await readFile(pkgPath, 'utf8'));
  pkg.name = name;
  for (const field of ['dependencies', 'devDependencies']) {
    for (const dep of Object.keys(pkg[field] ?? {})) {
      const version = versions[dep];
      if (!version) throw new Error(`create-tributary: template ${template} depends on ${dep}, which has no pinned version`);
      pkg[field][dep] = version;
    }
  }
  await writeFile(pkgPath, `${JSON.stringify(pkg, null, 2)}\n`);
  return target;
}

/**
 * @param {string} from
 * @param {string} to
 * @param {string} name
 */
async function copyTemplate(from, to, name) {
  await mkdir(to, { recursive: true });
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    const target = join(to, RENAMES[entry.name] ?? entry.name);
    if (entry.isDirectory()) await copyTemplate(source, target, name);
    else if (TEXT_WITH_NAME.test(entry.name)) {
      await writeFile(target, (await readFile(source, 'utf8')).replaceAll('{{name}}', name));
    } else await copyFile(source, target);
  }
}
