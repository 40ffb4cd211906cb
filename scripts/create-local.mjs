#!/usr/bin/env node
// Scaffolds a project wired to this clone's build, until the SDK is on the npm registry:
//   cd <where the project goes> && npm --prefix <clone> run create:local -- my-connector --template basic-poll --yes
// Builds the SDK into .tributary/local-pack/ (the clone's dist/ is left alone), packs it there,
// and runs create-tributary from the clone with the project's SDK dependency set to that tarball.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { main } from '../create-tributary/lib/main.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const stage = join(root, '.tributary', 'local-pack');
rmSync(stage, { recursive: true, force: true });
mkdirSync(stage, { recursive: true });
for (const file of ['package.json', 'README.md', 'CHANGELOG.md']) copyFileSync(join(root, file), join(stage, file));
const run = (command, args, cwd) => execFileSync(command, args, { cwd, stdio: ['ignore', 'ignore', 'inherit'] });
process.stderr.write('create:local: building the SDK and packing it...\n');
run(process.platform === 'win32' ? 'npx.cmd' : 'npx', ['tsup', '--out-dir', join(stage, 'dist')], root);
run(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['pack', '--ignore-scripts', '--pack-destination', stage], stage);
const tarball = readdirSync(stage).find((f) => f.endsWith('.tgz'));
if (!tarball) throw new Error(`create:local: npm pack wrote no tarball into ${stage}`);
// npm run starts scripts in the package's folder; INIT_CWD is where it was typed.
const cwd = process.env.INIT_CWD ?? process.cwd();
process.exitCode = await main([...process.argv.slice(2), '--tributary', `file:${join(stage, tarball)}`], {
  cwd,
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  interactive: Boolean(process.stdin.isTTY && process.stdout.isTTY),
});
