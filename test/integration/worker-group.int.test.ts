import { spawn } from 'node:child_process';
import { afterEach, expect, it } from 'vitest';
import { isTributaryError } from '../../src/api/errors.js';
import { KafkajsWorkerGroup, type WorkerGroupLogger } from '../../src/kafka/kafkajs-worker-group.js';
import type { GroupJoin, GroupMember } from '../../src/runtime/distributed/ports.js';
import { type WatchedProcess, waitFor, watchProcess } from '../helpers/child-output.js';
import { describeKafka, requireKafkaBootstrap, testKafka, uniqueTopic } from '../helpers/kafka.js';

const SESSION_MS = 2000;

const silent: WorkerGroupLogger = { debug() {}, info() {}, warn() {}, error() {} };

/** One in-process member and what its handler saw. */
class Member {
  readonly joins: GroupJoin[] = [];
  readonly lost: string[] = [];
  readonly assigned: Array<{ generation: number; members: GroupMember[] }> = [];
  /** Work the member runs: set at its first join, kept across rebalances, dropped on onLost. */
  work: string | undefined;
  /** What metadata() says; a worker's changes when its config offset or owned work does. */
  meta: string;
  readonly group: KafkajsWorkerGroup;

  constructor(
    readonly name: string,
    groupId: string,
  ) {
    this.meta = `url-of-${name}`;
    this.group = new KafkajsWorkerGroup({
      kafka: testKafka(undefined, name),
      groupId,
      sessionTimeoutMs: SESSION_MS,
      heartbeatIntervalMs: 250,
      rebalanceTimeoutMs: 5000,
      protocolName: 'tributary-1',
      logger: silent,
    });
  }

  start(): Promise<void> {
    return this.group.start({
      metadata: () => Buffer.from(this.meta),
      assign: async (generation, members) => {
        this.assigned.push({ generation, members: [...members] });
        return new Map(members.map((m) => [m.memberId, Buffer.from(`gen ${generation} for ${m.metadata.toString()}`)]));
      },
      onJoined: async (join) => {
        this.joins.push(join);
        this.work ??= `work of ${this.name}`;
      },
      onLost: async (reason) => {
        this.lost.push(reason);
        this.work = undefined;
      },
    });
  }

  generation(): number {
    return this.joins.at(-1)?.generation ?? -1;
  }
}

const members: Member[] = [];
const children: WatchedProcess[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) {
    c.child.kill('SIGCONT');
    c.child.kill('SIGKILL');
    await c.exited;
  }
  await Promise.all(members.splice(0).map((m) => m.group.leave()));
});

async function threeMembers(groupId: string): Promise<Member[]> {
  const three = ['a', 'b', 'c'].map((n) => new Member(n, groupId));
  members.push(...three);
  await Promise.all(three.map((m) => m.start()));
  // Members that joined one after the other went through several generations: wait for one
  // generation that has all three.
  await waitFor(
    () =>
      three.every((m) => m.generation() === three[0]?.generation() && m.generation() >= 0) &&
      leaderOf(three)?.assigned.at(-1)?.members.length === 3,
    15_000,
    'one generation with all three members',
  );
  return three;
}

function leaderOf(ms: Member[]): Member | undefined {
  return ms.find((m) => {
    const j = m.joins.at(-1);
    return j !== undefined && j.leaderId === j.memberId;
  });
}

describeKafka('KafkajsWorkerGroup against the broker', () => {
  it('elects one leader, which sees every member metadata and gives each member the bytes it assigned', async () => {
    const three = await threeMembers(uniqueTopic('wg-assign'));
    const generation = three[0]?.generation() as number;
    const leaders = three.filter((m) => m.joins.at(-1)?.leaderId === m.joins.at(-1)?.memberId);
    expect(leaders).toHaveLength(1);
    const leader = leaders[0] as Member;
    const round = leader.assigned.find((a) => a.generation === generation);
    expect(round?.members.map((m) => m.metadata.toString()).sort()).toEqual(['url-of-a', 'url-of-b', 'url-of-c']);
    for (const m of three) {
      const join = m.joins.at(-1) as GroupJoin;
      expect(join.leaderId).toBe(leader.joins.at(-1)?.memberId);
      expect(join.assignment.toString()).toBe(`gen ${generation} for url-of-${m.name}`);
      expect(m.group.lastConfirmedAt()).toBeGreaterThan(Date.now() - SESSION_MS);
    }
  });

  it('gives every member a new generation on requestRejoin (the leader, or a member whose metadata changed), with the work kept running', async () => {
    const three = await threeMembers(uniqueTopic('wg-rejoin'));
    const leader = leaderOf(three) as Member;
    const follower = three.find((m) => m !== leader) as Member;
    for (const [who, change] of [
      [leader, false],
      [follower, true],
    ] as const) {
      const before = three[0]?.generation() as number;
      if (change) who.meta = `${who.meta}+config-offset-7`;
      who.group.requestRejoin('test asks');
      await waitFor(() => three.every((m) => m.generation() > before), 10_000, 'a new generation for all');
      const after = three[0]?.generation();
      expect(three.map((m) => m.generation())).toEqual([after, after, after]);
      for (const m of three) {
        expect(m.lost).toEqual([]);
        expect(m.work).toBe(`work of ${m.name}`);
      }
    }
    const round = leaderOf(three)?.assigned.at(-1);
    expect(round?.members.map((m) => m.metadata.toString())).toContain(`url-of-${follower.name}+config-offset-7`);
  });

  it('rebalances the others quickly when one member leaves', async () => {
    const three = await threeMembers(uniqueTopic('wg-leave'));
    const before = three[0]?.generation() as number;
    const [a, b, c] = three as [Member, Member, Member];
    const left = Date.now();
    await c.group.leave();
    await c.group.leave(); // idempotent
    await waitFor(() => a.generation() > before && b.generation() > before, 5000, 'a new generation without c');
    expect(Date.now() - left).toBeLessThan(SESSION_MS); // far sooner than a session timeout
    expect(
      leaderOf([a, b])
        ?.assigned.at(-1)
        ?.members.map((m) => m.metadata.toString())
        .sort(),
    ).toEqual(['url-of-a', 'url-of-b']);
    expect(a.lost).toEqual([]);
    expect(b.lost).toEqual([]);
  });

  it('drops a frozen member after its session, and on resume it gets onLost before it does any work', async () => {
    const groupId = uniqueTopic('wg-frozen');
    const child = watchProcess(
      spawn(process.execPath, ['--import', 'tsx', 'test/helpers/worker-group-member.ts', requireKafkaBootstrap(), groupId, 'z'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    children.push(child);
    const events = () =>
      child
        .stdout()
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as { event: string; generation?: number; reason?: string });
    await waitFor(() => events().some((e) => e.event === 'joined'), 20_000, 'the child to join');
    const a = new Member('a', groupId);
    const b = new Member('b', groupId);
    members.push(a, b);
    await Promise.all([a.start(), b.start()]);
    const childGeneration = () =>
      events()
        .filter((e) => e.event === 'joined')
        .at(-1)?.generation ?? -2;
    await waitFor(
      () => a.generation() === b.generation() && a.generation() === childGeneration(),
      15_000,
      'a generation with the child',
    );
    await waitFor(() => events().filter((e) => e.event === 'work').length > 3, 5000, 'the child to work');
    const withChild = a.generation();

    child.child.kill('SIGSTOP');
    await new Promise((r) => setTimeout(r, 200)); // what it wrote before the stop has arrived
    const seenBeforeResume = events().length;
    await waitFor(
      () => a.generation() > withChild && b.generation() > withChild,
      SESSION_MS + 5000,
      'a rebalance without the child',
    );
    expect(
      leaderOf([a, b])
        ?.assigned.at(-1)
        ?.members.map((m) => m.metadata.toString())
        .sort(),
    ).toEqual(['url-of-a', 'url-of-b']);
    expect(a.lost).toEqual([]);
    expect(b.lost).toEqual([]);

    child.child.kill('SIGCONT');
    await waitFor(() => events().length > seenBeforeResume, 5000, 'the child to resume');
    const afterResume = events().slice(seenBeforeResume);
    expect(afterResume[0]?.event).toBe('lost');
    expect(afterResume[0]?.reason).toMatch(/no heartbeat was accepted for \d+ ms \(session.timeout.ms=2000\)/);
    // ... and it comes back as a new member, in a generation with all three.
    await waitFor(
      () =>
        events().some((e, i) => i > seenBeforeResume && e.event === 'joined') &&
        a.generation() === childGeneration() &&
        b.generation() === childGeneration(),
      10_000,
      'a generation with the child again',
    );
    expect(child.stderr()).toBe('');
  });

  it('refuses the group.id of a kafkajs consumer group with an error that says what to change', async () => {
    const kafka = testKafka();
    const topic = uniqueTopic('wg-consumer-topic');
    const groupId = uniqueTopic('wg-consumer-group');
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();
    const consumer = kafka.consumer({ groupId, sessionTimeout: 6000 });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    let joined = false;
    consumer.on(consumer.events.GROUP_JOIN, () => {
      joined = true;
    });
    await consumer.run({ eachMessage: async () => {} });
    try {
      await waitFor(() => joined, 15_000, 'the consumer to join');
      const m = new Member('x', groupId);
      members.push(m);
      const error = await m.start().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isTributaryError(error) && error.code).toBe('GROUP_REJECTED');
      expect((error as Error).message).toMatch(
        /INCONSISTENT_GROUP_PROTOCOL.*another kind of group.*Give the Tributary workers a group\.id no other application uses/,
      );
      expect(m.joins).toEqual([]);
    } finally {
      await consumer.disconnect();
    }
  });
});
