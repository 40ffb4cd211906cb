import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ensureKafkaJars } from '../kafka/broker.js';

const SOURCE = fileURLToPath(new URL('./JavaPartitions.java', import.meta.url));

/**
 * The partition Kafka's own Java producer (its built-in default partitioner, from the Kafka
 * jars the test broker runs on) picks for each key among `partitions` partitions, computed by
 * running {@link SOURCE} with `java`.
 */
export async function javaPartitions(keys: readonly string[], partitions: number): Promise<number[]> {
  for (const k of keys) if (k.includes('\n')) throw new Error(`javaPartitions: key ${JSON.stringify(k)} has a newline`);
  const libs = await ensureKafkaJars();
  const java = process.env.JAVA_HOME ? `${process.env.JAVA_HOME}/bin/java` : 'java';
  const child = spawn(java, ['-cp', `${libs}/*`, SOURCE, String(partitions)], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString('utf8');
  });
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString('utf8');
  });
  child.stdin.end(keys.map((k) => `${k}\n`).join(''));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  if (code !== 0) throw new Error(`java ${SOURCE} exited with ${code}: ${err}`);
  const lines = out.trim().split('\n').map(Number);
  if (lines.length !== keys.length || lines.some((n) => !Number.isInteger(n))) {
    throw new Error(`java ${SOURCE} printed ${JSON.stringify(out)} for ${keys.length} keys`);
  }
  return lines;
}
