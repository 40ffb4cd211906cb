/**
 * The recorded Kafka Connect answers of config/validate (test/fixtures/connect-validate, which
 * test/unit/validate-parity.test.ts compares Tributary's answers with) against a live
 * standalone Kafka Connect (the jars of bench/connect/fetch.ts) on the test broker: each case
 * must still get exactly the recorded answer, so the fixtures are Kafka Connect's and not
 * edited by hand. After a Connect upgrade, `npx tsx bench/connect/record-validate.ts` records
 * them again.
 *
 * Without Maven or a JDK the file skips, except under CI=true, where it fails.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  CASES,
  type ConnectStandalone,
  FIXTURES_DIR,
  startConnectStandalone,
  validateCase,
} from '../../bench/connect/record-validate.js';
import { describeKafka, requireKafkaBootstrap } from '../helpers/kafka.js';

let connect: ConnectStandalone | undefined;
let unavailable: string | undefined;

beforeAll(async () => {
  try {
    connect = await startConnectStandalone(requireKafkaBootstrap());
  } catch (e) {
    if (process.env.CI === 'true' || (e as Error).name !== 'SetupError') throw e;
    unavailable = (e as Error).message;
  }
}, 300_000);

afterAll(async () => connect?.stop());

describeKafka('config/validate of a live Kafka Connect', () => {
  it('answers every recorded case exactly as recorded', async () => {
    if (connect === undefined) {
      console.warn(`Kafka Connect unavailable, comparison not run: ${unavailable}`);
      return;
    }
    for (const c of CASES) {
      const recorded = JSON.parse(readFileSync(join(FIXTURES_DIR, `${c.name}.json`), 'utf8'));
      expect(await validateCase(connect, c), c.name).toEqual(recorded);
    }
  });
});
