/**
 * A KafkajsWorkerGroup member in a process of its own, for tests that freeze it (SIGSTOP).
 * Usage: `node --import tsx test/helpers/worker-group-member.ts <bootstrap> <groupId> <name>`.
 *
 * Prints one JSON line per event: `{"event":"joined","generation":n,"assignment":"..."}`,
 * `{"event":"lost","reason":"..."}`, and every 20 ms `{"event":"work","gapMs":n}` for work it
 * did. The work timer asks the group first (`checkSession()`), as a worker's tasks would, so it
 * does no work on a membership that ran out while the process was frozen.
 */
import { Kafka, logLevel } from 'kafkajs';
import { KafkajsWorkerGroup } from '../../src/kafka/kafkajs-worker-group.js';

const [bootstrap, groupId, name] = process.argv.slice(2) as [string, string, string];
const print = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);
const quiet = {
  debug() {},
  info() {},
  warn() {},
  error: (obj: object, msg: string) => process.stderr.write(`${msg} ${JSON.stringify(obj)}\n`),
};

const group = new KafkajsWorkerGroup({
  kafka: new Kafka({ clientId: name, brokers: bootstrap.split(','), logLevel: logLevel.NOTHING }),
  groupId,
  sessionTimeoutMs: Number(process.env.SESSION_TIMEOUT_MS ?? 2000),
  heartbeatIntervalMs: 250,
  rebalanceTimeoutMs: 5000,
  protocolName: 'tributary-1',
  logger: quiet,
});
let working = false;
let lastWork = Date.now();
setInterval(() => {
  if (!group.checkSession() || !working) return;
  const now = Date.now();
  print({ event: 'work', gapMs: now - lastWork });
  lastWork = now;
}, 20);
await group.start({
  metadata: () => Buffer.from(name),
  assign: async (_g, members) => new Map(members.map((m) => [m.memberId, Buffer.from(`for ${m.metadata}`)])),
  onJoined: async (join) => {
    working = true;
    lastWork = Date.now();
    print({ event: 'joined', generation: join.generation, assignment: join.assignment.toString() });
  },
  onLost: async (reason) => {
    working = false;
    print({ event: 'lost', reason });
  },
});
process.on('SIGTERM', () => {
  void group.leave().then(() => process.exit(0));
});
