// @ts-check
// Runs after `npm pack` / `npm publish`: removes what prepack.js copied in.
import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

await rm(fileURLToPath(new URL('../templates', import.meta.url)), { recursive: true, force: true });
await rm(fileURLToPath(new URL('../versions.json', import.meta.url)), { force: true });
