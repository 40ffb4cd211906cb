/**
 * `--patched-kafkajs`: what two fixes inside kafkajs 2.2.4 would give, measured without touching
 * the project's node_modules. A copy of kafkajs with the fixes goes to
 * `bench/.work/build/node_modules/kafkajs`, which Node finds before the project's own for the
 * bundles in bench/.work/build (Tributary and the raw producer alike). The build dir is wiped by
 * every harness run, so a normal run never uses it.
 *
 * 1. `producer/groupMessagesPerPartition.js` builds each partition's array with
 *    `[...current, message]`, copying it once per message: quadratic in the messages per
 *    partition (500,000 element copies and ~4 MB of garbage per 1000-record batch). Fixed with
 *    `push`, same result.
 * 2. `protocol/requests/produce/v3/request.js` (used by Produce v3-v7) spreads every message
 *    into a new object to add two fields before encoding it, and sorts the timestamps with the
 *    default (string) comparator. Fixed by passing the five fields `Record` reads, and a numeric
 *    comparator (the same order for 13-digit millisecond timestamps).
 */
import { cp, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const GROUP_FIXED = `module.exports = ({ topic, partitionMetadata, messages, partitioner }) => {
  if (partitionMetadata.length === 0) {
    return {}
  }
  const result = {}
  for (const message of messages) {
    const partition = partitioner({ topic, partitionMetadata, message })
    const current = result[partition]
    if (current === undefined) result[partition] = [message]
    else current.push(message)
  }
  return result
}
`;

/** Copies kafkajs next to the bundles in `buildDir` with the two fixes applied; returns its path. */
export async function installPatchedKafkajs(buildDir: string): Promise<string> {
  const require = createRequire(import.meta.url);
  const source = dirname(require.resolve('kafkajs/package.json'));
  const target = join(buildDir, 'node_modules', 'kafkajs');
  await cp(source, target, { recursive: true });
  await writeFile(join(target, 'src/producer/groupMessagesPerPartition.js'), GROUP_FIXED);
  const requestFile = join(target, 'src/protocol/requests/produce/v3/request.js');
  const request = await readFile(requestFile, 'utf8');
  const spread = `    Record({
      ...message,
      offsetDelta: i,
      timestampDelta: (message.timestamp || dateNow) - firstTimestamp,
    })`;
  const sorted = `    .filter(timestamp => timestamp != null)
    .sort()`;
  if (!request.includes(spread) || !request.includes(sorted)) {
    throw new Error(`${requestFile} is not kafkajs 2.2.4's: the patch does not apply`);
  }
  await writeFile(
    requestFile,
    request
      .replace(
        spread,
        `    Record({
      key: message.key,
      value: message.value,
      headers: message.headers,
      offsetDelta: i,
      timestampDelta: (message.timestamp || dateNow) - firstTimestamp,
    })`,
      )
      .replace(sorted, '    .filter(timestamp => timestamp != null)\n    .sort((a, b) => a - b)'),
  );
  return target;
}
