#!/usr/bin/env node
// npm create tributary@latest my-connector -- --template basic-poll
import { main } from './lib/main.js';

process.exitCode = await main(process.argv.slice(2), {
  cwd: process.cwd(),
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  interactive: Boolean(process.stdin.isTTY && process.stdout.isTTY),
});
