/**
 * A slow broker for the rss series: a `producer_byte_rate` quota on one client id
 * (bench/connect/ClientQuota.java, run with the Java Admin client of Kafka Connect's jars). The
 * broker then delays its Produce responses and mutes that client's connection until the client
 * is back under the rate, so a producer with one request in flight writes at about that rate.
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const SOURCE = join(dirname(fileURLToPath(import.meta.url)), '..', 'connect', 'ClientQuota.java');

/** Sets (`bytesPerSec`) or removes (`undefined`) the `producer_byte_rate` quota of `clientId`. */
export async function setProducerQuota(
  java: string,
  libs: string,
  bootstrap: string,
  clientId: string,
  bytesPerSec: number | undefined,
): Promise<void> {
  await promisify(execFile)(
    java,
    ['-cp', `${libs}/*`, SOURCE, bootstrap, clientId, bytesPerSec === undefined ? 'delete' : String(bytesPerSec)],
    { timeout: 60_000 },
  );
}
