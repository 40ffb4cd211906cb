/**
 * `npm create tributary` end to end, outside the repository: packs Tributary (built with tsup
 * into a staging folder, so the repository's dist/ is left alone) and create-tributary (whose
 * prepack copies the templates in), scaffolds each template with the packed create-tributary,
 * installs it with the Tributary tarball (one `npm install` per template; everything else from
 * the npm registry, through the shared npm cache) and runs the project's tests, typecheck and
 * build; both projects also run through the installed `tributary standalone` command, as their
 * READMEs say, and the install must not warn EBADENGINE on Node 20. Slow (about 30 s on a warm npm cache, more on a cold one),
 * hence the integration project. Needs the npm registry; no broker.
 */
import { execFile, spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = new URL('../..', import.meta.url).pathname;
const TEMPLATES = ['basic-poll', 'push-heartbeat'];
const SETUP_TIMEOUT_MS = 180_000;
const TEMPLATE_TIMEOUT_MS = 420_000;

/** The children's environment: plain output (vitest sets FORCE_COLOR for its workers). */
const childEnv: NodeJS.ProcessEnv = { ...process.env, CI: 'true', NO_COLOR: '1' };
delete childEnv.FORCE_COLOR;

/** Runs a command; resolves with its stdout (with `both`, stdout and stderr), rejects with its output's tail when it exits non-zero. */
function sh(command: string, args: string[], cwd: string, both = false): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, maxBuffer: 64 * 1024 * 1024, env: childEnv }, (error, stdout, stderr) => {
      if (error) {
        const tail = `${stdout}\n${stderr}`.trim().split('\n').slice(-40).join('\n');
        reject(new Error(`${command} ${args.join(' ')} (in ${cwd}) failed: ${error.message}\n${tail}`));
      } else resolve(both ? `${stdout}\n${stderr}` : stdout);
    });
  });
}

async function timed<T>(label: string, work: () => Promise<T>): Promise<T> {
  const started = Date.now();
  try {
    return await work();
  } finally {
    console.log(`[scaffold] ${label}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
}

async function tarballIn(dir: string, prefix: string): Promise<string> {
  const found = (await readdir(dir)).find((f) => f.startsWith(prefix) && f.endsWith('.tgz'));
  if (!found) throw new Error(`no ${prefix}*.tgz in ${dir}`);
  return join(dir, found);
}

/**
 * Runs `tributary standalone worker.properties <connector file>` with the installed command in
 * the generated project until `until` is printed on stdout (or it exits), then stops it with
 * SIGINT; resolves with its exit code and output.
 */
async function runTributary(
  project: string,
  connectorFile: string,
  until: string,
): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(join(project, 'node_modules', '.bin', 'tributary'), ['standalone', 'worker.properties', connectorFile], {
    cwd: project,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const deadline = Date.now() + 30_000;
  while (!out.includes(until) && child.exitCode === null && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGINT');
  return { code: await exited, out, err };
}

/** The generated push-heartbeat connector, run until a heartbeat is printed. */
async function runPushHeartbeat(project: string): Promise<void> {
  await writeFile(
    join(project, 'fast.properties'),
    [
      'name=fast',
      'connector.class=./dist/index.js#ChangesConnector',
      'topic=changes',
      'simulated.changes=3',
      'simulated.interval.ms=100',
      'heartbeat.interval.ms=300',
      'heartbeat.topic=beats',
    ].join('\n'),
  );
  const { code, out, err } = await runTributary(project, 'fast.properties', '"topic":"beats"');
  expect(code, `tributary standalone failed:\n${err}`).toBe(0);
  const topics = out
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line).topic);
  expect(topics.slice(0, 3)).toEqual(['changes', 'changes', 'changes']);
  expect(topics).toContain('beats');
}

/**
 * The generated basic-poll project, run exactly as its README says (its own connector.properties,
 * whose url is the built-in demo source), until items are printed; then a .ts connector.class,
 * which the built command cannot load, gets a message that says how to run it.
 */
async function runBasicPoll(project: string): Promise<void> {
  const { code, out, err } = await runTributary(project, 'connector.properties', '"id":3');
  expect(code, `tributary standalone failed:\n${err}`).toBe(0);
  const items = out
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
  expect(items.slice(0, 3).map((r) => [r.topic, r.value.id])).toEqual([
    ['items', 1],
    ['items', 2],
    ['items', 3],
  ]);
  expect(err).toContain('final offset flush');
  await writeFile(
    join(project, 'ts.properties'),
    ['name=ts', 'connector.class=./src/index.ts#ItemsConnector', 'url=demo:items', 'topic=items'].join('\n'),
  );
  const ts = await runTributary(project, 'ts.properties', '"topic"');
  expect(ts.code).toBe(1);
  expect(ts.err).toContain('is a TypeScript file, which Node cannot load by itself: build it and name the built .js file');
  expect(ts.err).not.toContain('ERR_UNKNOWN_FILE_EXTENSION');
}

describe('npm create tributary, outside the repository', () => {
  let work: string;
  let tributaryTarball: string;
  let createBin: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'tributary-scaffold-'));
    const stage = join(work, 'tributary');
    await mkdir(stage);
    for (const file of ['package.json', 'README.md', 'CHANGELOG.md']) await copyFile(join(root, file), join(stage, file));
    await timed('build tributary (tsup)', () => sh('npx', ['tsup', '--out-dir', join(stage, 'dist')], root));
    await timed('pack tributary', () => sh('npm', ['pack', '--ignore-scripts', '--pack-destination', work], stage));
    tributaryTarball = await tarballIn(work, 'tributary-');
    await timed('pack create-tributary', () => sh('npm', ['pack', '--pack-destination', work], join(root, 'create-tributary')));
    const unpacked = join(work, 'create-tributary');
    await mkdir(unpacked);
    await sh('tar', ['-xzf', await tarballIn(work, 'create-tributary-'), '-C', unpacked], work);
    createBin = join(unpacked, 'package', 'index.js');
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  for (const template of TEMPLATES) {
    it(
      `scaffolds ${template}, installs it from the packed tarball, and its tests, typecheck and build pass`,
      async () => {
        const parent = join(work, template);
        await mkdir(parent);
        await sh(process.execPath, [createBin, 'my-conn', '--template', template, '--yes'], parent);
        const project = join(parent, 'my-conn');
        expect(await readdir(project)).toContain('.gitignore');
        const install = await timed(`${template}: npm install`, () =>
          sh('npm', ['install', tributaryTarball, '--no-audit', '--no-fund', '--prefer-offline'], project, true),
        );
        // Node 20 is the supported minimum: nothing installed may want a newer Node (cookie@2 did).
        expect(install).not.toContain('EBADENGINE');
        // Every entry loads as a CommonJS user requires it and as an ES module user imports it.
        const loads = await sh(
          process.execPath,
          [
            '-e',
            "const s = ['tributary-connect', 'tributary-connect/testing', 'tributary-connect/runtime'];" +
              'const n = s.map((m) => Object.keys(require(m)).length);' +
              "Promise.all(s.map((m) => import(m))).then((e) => console.log('loaded', n.join(','), e.map((x) => Object.keys(x).length).join(',')));",
          ],
          project,
        );
        expect(loads).toMatch(/^loaded \d+,\d+,\d+ \d+,\d+,\d+/m);
        const tests = await timed(`${template}: npm test`, () => sh('npm', ['test'], project));
        expect(tests).toMatch(/Tests\s+\d+ passed/);
        expect(tests).not.toMatch(/failed/);
        await timed(`${template}: npm run typecheck`, () => sh('npm', ['run', 'typecheck'], project));
        await timed(`${template}: npm run build`, () => sh('npm', ['run', 'build'], project));
        expect(await readdir(join(project, 'dist'))).toContain('index.js');
        // Both need nothing outside: run them with the installed tributary command.
        if (template === 'push-heartbeat') await timed(`${template}: tributary standalone`, () => runPushHeartbeat(project));
        if (template === 'basic-poll') await timed(`${template}: tributary standalone`, () => runBasicPoll(project));
      },
      TEMPLATE_TIMEOUT_MS,
    );
  }

  it(
    "scaffolds from a clone with npm run create:local, wired to the clone's build, and its tests pass",
    async () => {
      const parent = join(work, 'local');
      await mkdir(parent);
      // As the README says: in the folder where the project goes, npm --prefix <clone> run create:local.
      await timed('create:local', () =>
        sh(
          'npm',
          ['--prefix', root, 'run', '-s', 'create:local', '--', 'local-conn', '--template', 'push-heartbeat', '--yes'],
          parent,
        ),
      );
      const project = join(parent, 'local-conn');
      const pkg = JSON.parse(await readFile(join(project, 'package.json'), 'utf8'));
      expect(pkg.dependencies['tributary-connect']).toMatch(/^file:.*\.tributary\/local-pack\/tributary-connect-[\d.]+\.tgz$/);
      await timed('create:local: npm install', () =>
        sh('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], project),
      );
      const tests = await timed('create:local: npm test', () => sh('npm', ['test'], project));
      expect(tests).toMatch(/Tests\s+\d+ passed/);
    },
    TEMPLATE_TIMEOUT_MS,
  );
});
