import { existsSync, statSync } from 'node:fs';
import { readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { KAFKA_VERSION } from '../../test/kafka/broker.js';
import { mavenCopyDependencies, runCommand as run } from '../../test/kafka/maven-copy.js';
import { SetupError } from '../lib/setup-error.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const POM = join(HERE, 'pom.xml');
/** Where the bench keeps what it downloads and builds (gitignored). */
export const WORK_DIR: string = resolve(HERE, '..', '.work');
/** The newest release with connect-runtime, connect-file and kafka-tools all on Maven Central (checked 2026-11-30). */
export const FALLBACK_CONNECT_VERSION = '4.3.1';

/** The jars of one Kafka Connect release. */
export interface ConnectJars {
  readonly version: string;
  /** A directory of jars: the classpath is `<libs>/*`. */
  readonly libs: string;
}

/**
 * Makes sure Kafka Connect's jars are in `bench/.work/connect-<version>/libs`, fetching them with
 * Maven (offline first, so a filled ~/.m2 needs no network) when missing.
 *
 * @throws Error saying what to install when Maven is missing, or Maven's output when it fails.
 */
export async function ensureConnectJars(): Promise<ConnectJars> {
  const forced = process.env.TRIBUTARY_CONNECT_VERSION?.trim();
  const candidates = forced ? [forced] : [...new Set([KAFKA_VERSION, FALLBACK_CONNECT_VERSION])];
  const problems: string[] = [];
  for (const version of candidates) {
    const libs = join(WORK_DIR, `connect-${version}`, 'libs');
    if (isComplete(libs, version)) return { version, libs };
    // A release found incomplete on Maven Central is asked again after a day, not on every run.
    const unavailable = join(WORK_DIR, `connect-${version}.unavailable`);
    if (!forced && isFresh(unavailable)) {
      problems.push(`${version}: ${await readFile(unavailable, 'utf8')}`);
      continue;
    }
    const result = await fetchInto(libs, version);
    if (result === 'ok') return { version, libs };
    problems.push(`${version}: ${result}`);
    if (result.includes('is not on Maven Central')) await writeFile(unavailable, result);
  }
  throw new SetupError(`Could not fetch Kafka Connect's jars with Maven:\n${problems.join('\n')}`);
}

function isFresh(file: string): boolean {
  try {
    return Date.now() - statSync(file).mtimeMs < 24 * 3600_000;
  } catch {
    return false;
  }
}

function isComplete(libs: string, version: string): boolean {
  return (
    existsSync(join(libs, `connect-runtime-${version}.jar`)) &&
    existsSync(join(libs, `connect-file-${version}.jar`)) &&
    existsSync(join(libs, `kafka-tools-${version}.jar`))
  );
}

async function fetchInto(libs: string, version: string): Promise<'ok' | string> {
  const fetched = await mavenCopyDependencies(POM, version, libs, (dir) => isComplete(dir, version));
  if (fetched.ok) return 'ok';
  const { result } = fetched;
  if (result.code === 127) {
    throw new SetupError(
      'Maven (mvn) is needed to fetch Apache Kafka Connect from Maven Central, but it is not installed ' +
        '(Debian: apt-get install maven). Java 17+ is needed too.',
    );
  }
  await rmdir(dirname(libs)).catch(() => {}); // only if empty
  // "Could not find artifact g:a:jar:v in central", or "g:a:jar:v was not found in <repo> during a previous attempt".
  const missing = (/Could not find artifact (\S+)/.exec(result.output) ?? /(\S+) was not found in/.exec(result.output))?.[1];
  return missing ? `${missing} is not on Maven Central` : tail(result.output, 15);
}

/** Checks that Java 17+ runs; returns the `java` to use and its version line. */
export async function checkJava(): Promise<{ java: string; version: string }> {
  const java = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
  const result = await run(java, ['-version']);
  if (result.code !== 0) {
    throw new SetupError(
      `Java 17+ is needed to run Kafka Connect and ProducerPerformance, but '${java} -version' failed` +
        `${result.code === 127 ? ' (not installed; Debian: apt-get install openjdk-17-jre-headless)' : `: ${tail(result.output, 3)}`}`,
    );
  }
  const line = result.output.split('\n')[0]?.trim() ?? '';
  const major = Number(/version "(\d+)/.exec(line)?.[1] ?? 0);
  if (major > 0 && major < 17) throw new SetupError(`Kafka needs Java 17+, found: ${line}`);
  return { java, version: line };
}

function tail(text: string, lines: number): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** Lists the jars (for a quick look): `npx tsx bench/connect/fetch.ts`. */
async function main(): Promise<void> {
  const jars = await ensureConnectJars();
  const count = (await readdir(jars.libs)).length;
  process.stderr.write(`Kafka Connect ${jars.version}: ${count} jars\n`);
  process.stdout.write(`${jars.libs}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
