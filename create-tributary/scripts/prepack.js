// @ts-check
// Runs before `npm pack` / `npm publish`: copies the repository's templates into the package and
// writes the versions they are pinned to (from Tributary's root package.json) to versions.json.
import { cp, readFile, rm, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { versionsOf } from '../lib/versions.js';

const here = (/** @type {string} */ path) => fileURLToPath(new URL(path, import.meta.url));

await rm(here('../templates'), { recursive: true, force: true });
await cp(here('../../templates'), here('../templates'), { recursive: true });
const root = JSON.parse(await readFile(here('../../package.json'), 'utf8'));
await writeFile(here('../versions.json'), `${JSON.stringify(versionsOf(root), null, 2)}\n`);
