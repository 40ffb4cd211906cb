import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

interface Io {
  cwd: string;
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  interactive: boolean;
}
type Main = (argv: string[], io: Io) => Promise<number>;

const bin = new URL('../../create-tributary/index.js', import.meta.url).pathname;
// A variable specifier: create-tributary is plain JavaScript without type declarations.
const mainModule = new URL('../../create-tributary/lib/main.js', import.meta.url).href;
const { main } = (await import(mainModule)) as { main: Main };
const root = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8'));

let cwd: string;
beforeEach(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'create-tributary-'));
});
afterEach(async () => {
  await rm(cwd, { recursive: true, force: true });
});

/** Runs create-tributary in-process; `answers` reply, in order, to the prompts that contain their first element. */
async function run(argv: string[], options: { interactive?: boolean; answers?: Array<[string, string]> } = {}) {
  const answers = [...(options.answers ?? [])];
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d) => {
    out += d;
    const next = answers[0];
    if (next && String(d).includes(next[0])) {
      answers.shift();
      stdin.write(`${next[1]}\n`);
    }
  });
  stderr.on('data', (d) => (err += d));
  const code = await main(argv, { cwd, stdin, stdout, stderr, interactive: options.interactive ?? false });
  return { code, out, err };
}

describe('create-tributary', () => {
  it('writes a project from a template with --template and --yes: dotfiles renamed, name and pinned versions filled in', async () => {
    const { code, out } = await run(['my-conn', '--template', 'push-heartbeat', '--yes']);
    expect(code).toBe(0);
    expect(out).toContain('Created my-conn from the push-heartbeat template in my-conn.');
    const dir = join(cwd, 'my-conn');
    expect((await readdir(dir)).sort()).toEqual([
      '.gitignore',
      'README.md',
      'connector.properties',
      'package.json',
      'src',
      'test',
      'tsconfig.build.json',
      'tsconfig.json',
      'worker.properties',
    ]);
    const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'));
    expect(pkg.name).toBe('my-conn');
    expect(pkg.dependencies).toEqual({
      'io-ts': root.dependencies['io-ts'],
      rxjs: root.dependencies.rxjs,
      'tributary-connect': root.version,
    });
    expect(pkg.devDependencies.vitest).toBe(root.devDependencies.vitest);
    expect(await readFile(join(dir, 'README.md'), 'utf8')).toMatch(/^# my-conn\n/);
    expect(await readFile(join(dir, 'connector.properties'), 'utf8')).toMatch(/^name=my-conn\n/);
  });

  it('pins every dependency of every template', async () => {
    for (const template of ['basic-poll', 'push-heartbeat']) {
      expect((await run([`p-${template}`, '--template', template])).code).toBe(0);
      const pkg = JSON.parse(await readFile(join(cwd, `p-${template}`, 'package.json'), 'utf8'));
      for (const version of [...Object.values(pkg.dependencies), ...Object.values(pkg.devDependencies)]) {
        expect(version).toMatch(/^\d+\.\d+\.\d+/);
      }
    }
  });

  it('asks for the name and the template on a terminal', async () => {
    const { code, out } = await run([], {
      interactive: true,
      answers: [
        ['Project name', 'Bad Name'],
        ['Project name', 'asked'],
        ['Template (', '2'],
      ],
    });
    expect(code).toBe(0);
    expect(out).toContain('"Bad Name" cannot be a project name');
    expect(out).toContain('Created asked from the push-heartbeat template');
    expect(await readdir(join(cwd, 'asked'))).toContain('src');
  });

  it('takes the defaults with --yes alone', async () => {
    expect((await run(['--yes'])).code).toBe(0);
    expect(JSON.parse(await readFile(join(cwd, 'my-connector', 'package.json'), 'utf8')).name).toBe('my-connector');
    expect(await readdir(join(cwd, 'my-connector', 'src'))).toContain('items-task.ts');
  });

  it('refuses to ask without a terminal, naming the flags to use instead', async () => {
    const { code, err } = await run(['my-conn']);
    expect(code).toBe(1);
    expect(err).toBe(
      'create-tributary: No terminal to ask for the template on: pass everything as flags, e.g.\n' +
        '  create-tributary my-conn --template basic-poll --yes\n' +
        '(--template <name> chooses the template, --yes asks nothing and takes the defaults)\n',
    );
  });

  it('rejects an unknown template, a bad name, an unknown flag and a non-empty folder, saying what is accepted', async () => {
    const unknown = await run(['x', '--template', 'kafka-sink', '--yes']);
    expect(unknown.err).toContain('Unknown template "kafka-sink". Accepted templates:\n  basic-poll ');
    expect(unknown.err).toContain('  push-heartbeat ');
    const badName = await run(['My Connector', '--yes']);
    expect(badName.err).toBe(
      'create-tributary: Invalid project name "My Connector": accepted are lowercase letters, digits, "-", ".", "_" and "~", starting with a letter or digit, optionally scoped as @scope/name.\n',
    );
    const flag = await run(['x', '--force']);
    expect(flag.err).toContain("Unknown option '--force'");
    expect(flag.err).toContain('Usage: npm create tributary@latest');
    await mkdir(join(cwd, 'taken'));
    await writeFile(join(cwd, 'taken', 'notes.txt'), 'mine');
    const taken = await run(['taken', '--yes']);
    expect(taken.err).toBe(
      `create-tributary: Folder ${join(cwd, 'taken')} exists and is not empty: choose another project name, remove the folder, or run in an empty folder with "." as the name.\n`,
    );
    expect([unknown.code, badName.code, flag.code, taken.code]).toEqual([1, 1, 1, 1]);
    expect(await readdir(join(cwd, 'taken'))).toEqual(['notes.txt']);
  });

  it('runs as a plain node command', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [bin, '--help']);
    expect(stdout).toContain('Templates:\n  basic-poll');
  });

  it('checks the target folder before asking anything', async () => {
    await mkdir(join(cwd, 'taken'));
    await writeFile(join(cwd, 'taken', 'notes.txt'), 'mine');
    const { code, out, err } = await run(['taken'], { interactive: true, answers: [['Template (', '1']] });
    expect(code).toBe(1);
    expect(err).toContain(`Folder ${join(cwd, 'taken')} exists and is not empty`);
    expect(out).not.toContain('Template (');
  });

  it('asks for another name when the one typed names a folder that is taken', async () => {
    await mkdir(join(cwd, 'taken'));
    await writeFile(join(cwd, 'taken', 'notes.txt'), 'mine');
    const { code, out } = await run([], {
      interactive: true,
      answers: [
        ['Project name', 'taken'],
        ['Project name', 'fresh'],
        ['Template (', '1'],
      ],
    });
    expect(code).toBe(0);
    expect(out).toContain(`Folder ${join(cwd, 'taken')} exists and is not empty`);
    expect(out).toContain('Created fresh from the basic-poll template in fresh.');
  });

  it('writes into the current folder with ".", naming the project after it', async () => {
    const here = join(cwd, 'my-here-conn');
    await mkdir(here);
    const { stdout } = await promisify(execFile)(process.execPath, [bin, '.', '--template', 'basic-poll', '--yes'], {
      cwd: here,
    });
    expect(stdout).toContain('Created my-here-conn from the basic-poll template in .');
    expect(stdout).not.toContain('cd .');
    expect(JSON.parse(await readFile(join(here, 'package.json'), 'utf8')).name).toBe('my-here-conn');
    expect(await readdir(here)).toContain('connector.properties');
  });

  it('refuses "." in a folder that is not empty, or whose name cannot be a package name', async () => {
    const parent = cwd;
    try {
      cwd = join(parent, 'full-here');
      await mkdir(cwd);
      await writeFile(join(cwd, 'notes.txt'), 'mine');
      const full = await run(['.', '--yes']);
      expect(full.code).toBe(1);
      expect(full.err).toContain(`Folder ${cwd} exists and is not empty`);
      cwd = join(parent, 'Odd Name');
      await mkdir(cwd);
      const odd = await run(['.', '--yes']);
      expect(odd.code).toBe(1);
      expect(odd.err).toContain('"." names the project after the current folder, but "Odd Name" cannot be a project name');
      expect(await readdir(cwd)).toEqual([]);
    } finally {
      cwd = parent;
    }
  });

  it('sets the SDK dependency to what --tributary gives, for a project wired to a local build', async () => {
    const { code } = await run([
      'wired',
      '--template',
      'basic-poll',
      '--yes',
      '--tributary',
      'file:/clone/tributary-connect-0.1.0.tgz',
    ]);
    expect(code).toBe(0);
    const pkg = JSON.parse(await readFile(join(cwd, 'wired', 'package.json'), 'utf8'));
    expect(pkg.dependencies['tributary-connect']).toBe('file:/clone/tributary-connect-0.1.0.tgz');
    expect(pkg.dependencies.rxjs).toBe(root.dependencies.rxjs);
  });
});
