/**
 * Kafka Connect's own transforms as a test oracle: fetches `connect-transforms` with Maven
 * (offline first), compiles Harness.java against it with javac, and runs every case in one JVM.
 *
 * `tsx test/connect-transforms/harness.ts fetch` does the fetch and build only (CI runs it
 * beside the Kafka jars' fetch).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mavenCopyDependencies, runCommand } from '../kafka/maven-copy.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const POM = join(HERE, 'pom.xml');
const SOURCE = join(HERE, 'Harness.java');
const CACHE = join(HERE, '.cache');

/** The Kafka Connect release compared against: the one in pom.xml (as bench/connect runs). */
export async function connectVersion(): Promise<string> {
  const pom = await readFile(POM, 'utf8');
  const m = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(pom);
  if (!m?.[1]) throw new Error(`no <kafka.version> in ${POM}`);
  return m[1];
}

/** A header as both sides print it: text (SimpleHeaderConverter's), or null. */
export interface OracleHeader {
  readonly key: string;
  readonly value: string | null;
}

/** A record in the harness's JSON form: integers are Longs, `{"$bytes"}` bytes, `{"$date"}` java.util.Date. */
export interface OracleRecord {
  readonly topic: string;
  readonly kafkaPartition?: number;
  readonly key?: unknown;
  readonly value: unknown;
  readonly headers?: ReadonlyArray<{ readonly key: string; readonly value: unknown }>;
  readonly timestamp?: number;
}

/** One transform config (the connector's `transforms*` and `predicates*` keys) and the records to run through it. */
export interface OracleCase {
  readonly id: string;
  readonly config: Readonly<Record<string, string>>;
  readonly records: readonly OracleRecord[];
}

/** What Kafka Connect did with one record. */
export type OracleResult =
  | { readonly record: OracleRecord & { readonly headers: OracleHeader[] } }
  | { readonly dropped: true }
  | { readonly error: string };

/** What Kafka Connect did with one case: rejected its config, or a result per record. */
export type OracleOutcome =
  | { readonly id: string; readonly configError: string }
  | { readonly id: string; readonly results: OracleResult[] };

/** Fetches the jars and compiles the harness if needed; returns the class path. */
export async function ensureHarness(): Promise<string> {
  const version = await connectVersion();
  const dir = join(CACHE, version);
  const libs = join(dir, 'libs');
  const markers = [`connect-transforms-${version}.jar`, `connect-json-${version}.jar`];
  const has = (folder: string) => markers.every((m) => existsSync(join(folder, m)));
  if (!has(libs)) {
    // A cache from before a jar was added to pom.xml: fetched again whole.
    await rm(libs, { recursive: true, force: true });
    const fetched = await mavenCopyDependencies(POM, version, libs, has);
    if (!fetched.ok) {
      const { code, output } = fetched.result;
      throw new Error(
        `Could not fetch Kafka Connect ${version} transforms with Maven (exit ${code}): ${code === 127 ? 'mvn is not installed' : output.slice(-2000)}`,
      );
    }
  }
  const source = await readFile(SOURCE);
  const digest = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const classes = join(dir, `classes-${digest}`);
  if (!existsSync(join(classes, 'Harness.class'))) {
    const staging = `${classes}.tmp-${process.pid}`;
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true });
    const result = await runCommand('javac', ['-nowarn', '-Xlint:-deprecation', '-d', staging, '-cp', `${libs}/*`, SOURCE]);
    if (result.code !== 0) {
      await rm(staging, { recursive: true, force: true });
      throw new Error(`javac failed on ${SOURCE} (exit ${result.code}): ${result.output.slice(-2000)}`);
    }
    try {
      await rename(staging, classes);
    } catch {
      await rm(staging, { recursive: true, force: true });
    }
  }
  for (const stale of readdirSync(dir).filter((n) => n.startsWith('classes-') && join(dir, n) !== classes)) {
    await rm(join(dir, stale), { recursive: true, force: true });
  }
  return `${classes}:${libs}/*`;
}

/** Runs every case through Kafka Connect's transforms in one JVM (in UTC, as the comparison assumes). */
export async function runOracle(cases: readonly OracleCase[]): Promise<OracleOutcome[]> {
  return JSON.parse(await runHarness([], cases)) as OracleOutcome[];
}

/** What Kafka Connect's JsonConverter (`schemas.enable=false`) wrote for one schemaless value: its text, or its exception. */
export type JsonConverterOutcome = { readonly json: string | null } | { readonly error: string };

/**
 * Runs each value (in the harness's form: `{"$bytes": base64}` a byte[], `{"$double": "NaN"}`
 * that Double) through Kafka Connect's JsonConverter with `schemas.enable=false`, in one JVM.
 */
export async function runJsonConverterOracle(values: readonly unknown[]): Promise<JsonConverterOutcome[]> {
  return JSON.parse(await runHarness(['json'], values)) as JsonConverterOutcome[];
}

async function runHarness(args: readonly string[], input: unknown): Promise<string> {
  const classpath = await ensureHarness();
  const file = join(CACHE, `cases-${process.pid}-${Date.now()}.json`);
  await writeFile(file, JSON.stringify(input));
  try {
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((done, fail) => {
      const child = spawn('java', ['-Xshare:auto', '-Duser.timezone=UTC', '-cp', classpath, 'Harness', ...args], {
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        out += d;
      });
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        err += d;
      });
      child.on('error', fail);
      child.on('close', (c) => done({ code: c, stdout: out, stderr: err }));
      readFile(file).then((data) => child.stdin.end(data), fail);
    });
    if (code !== 0) throw new Error(`The Kafka Connect harness exited with ${code}: ${stderr.slice(-2000)}`);
    return stdout;
  } finally {
    await rm(file, { force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1] && process.argv[2] === 'fetch') {
  ensureHarness().then(
    (cp) => process.stdout.write(`${cp}\n`),
    (e: unknown) => {
      process.stderr.write(`${(e as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}
