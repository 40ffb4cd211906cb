/**
 * Apache Kafka's producer performance tool (`org.apache.kafka.tools.ProducerPerformance`, what
 * `kafka-producer-perf-test.sh` runs) writing as many records of the same size as fast as it
 * can, with the same acks and no compression: the ceiling this broker allows a Java producer.
 * It uses the Java producer's own defaults otherwise (idempotence on, 5 in flight, which its
 * accumulator pipelines safely), plus the linger and the batch size given.
 */
import type { BenchSettings } from '../lib/settings.js';
import type { Contender, Launch, RunContext } from './contender.js';
import { KAFKA_RUN_CLASS_OPTIONS } from './kafka-connect.js';

/** `kafka-producer-perf-test.sh`'s heap, and `kafka-run-class.sh`'s G1 options. */
const PERF_JVM_OPTIONS = ['-Xmx512M', ...KAFKA_RUN_CLASS_OPTIONS];

export function producerPerformance(
  settings: BenchSettings,
  java: string,
  libs: string,
  version: string,
  batchBytes: number,
): Contender {
  const props = ['acks=all', 'compression.type=none', `linger.ms=${settings.producer.lingerMs}`, `batch.size=${batchBytes}`];
  return {
    id: 'perf',
    label: `ProducerPerformance ${version}`,
    sendsLines: false,
    settings: [
      `org.apache.kafka.tools.ProducerPerformance --record-size ${settings.lineBytes} --throughput -1 --producer-props ${props.join(' ')}`,
      'other settings: Java producer defaults (enable.idempotence=true, max.in.flight.requests.per.connection=5); ' +
        `JVM: ${PERF_JVM_OPTIONS.join(' ')} (kafka-producer-perf-test.sh defaults)`,
    ],
    async launch(run: RunContext): Promise<Launch> {
      return {
        command: java,
        args: [
          ...PERF_JVM_OPTIONS,
          '-cp',
          `${libs}/*`,
          'org.apache.kafka.tools.ProducerPerformance',
          '--topic',
          run.topic,
          '--num-records',
          String(run.records),
          '--record-size',
          String(run.lineBytes),
          '--throughput',
          '-1',
          '--producer-props',
          `bootstrap.servers=${run.bootstrap}`,
          ...props,
        ],
        kind: 'oneshot',
      };
    },
  };
}
