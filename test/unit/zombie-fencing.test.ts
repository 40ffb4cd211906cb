import { describe, expect, it } from 'vitest';
import type { ClusterConfigSnapshot } from '../../src/runtime/distributed/ports.js';
import { zombieFencing } from '../../src/runtime/distributed/zombie-fencing.js';

const id = (connector: string, task: number) => `g-${connector}-${task}`;

function snapshot(parts: { tasks?: number; record?: number; pending?: boolean; exists?: boolean }): ClusterConfigSnapshot {
  return {
    offset: 10n,
    connectors: new Map(parts.exists === false ? [] : [['c', { 'connector.class': 'X' }]]),
    targetStates: new Map(),
    taskConfigs: new Map(parts.tasks === undefined ? [] : [['c', Array.from({ length: parts.tasks }, () => ({}))]]),
    inconsistent: new Set(),
    restartRequests: [],
    loggerLevels: [],
    taskCountRecords: new Map(parts.record === undefined ? [] : [['c', parts.record]]),
    pendingFencing: new Set(parts.pending === false ? [] : ['c']),
  };
}

describe('zombieFencing', () => {
  it('fences every task id of the generation before when tasks.max shrinks, and keeps the larger count', () => {
    expect(zombieFencing(snapshot({ tasks: 1, record: 3 }), 'c', id)).toEqual({
      transactionalIds: ['g-c-0', 'g-c-1', 'g-c-2'],
      taskCount: 3,
    });
  });

  it('covers the new task ids when the connector grows, so the next round fences them too', () => {
    expect(zombieFencing(snapshot({ tasks: 4, record: 2 }), 'c', id)).toEqual({
      transactionalIds: ['g-c-0', 'g-c-1', 'g-c-2', 'g-c-3'],
      taskCount: 4,
    });
  });

  it('fences the ids of the first generation when no task count record exists yet', () => {
    expect(zombieFencing(snapshot({ tasks: 2 }), 'c', id)?.transactionalIds).toEqual(['g-c-0', 'g-c-1']);
  });

  it('fences the earlier tasks of a stopped connector (zero task configs)', () => {
    expect(zombieFencing(snapshot({ tasks: 0, record: 2 }), 'c', id)).toEqual({
      transactionalIds: ['g-c-0', 'g-c-1'],
      taskCount: 2,
    });
  });

  it('plans nothing when no fencing is pending or the connector is gone', () => {
    expect(zombieFencing(snapshot({ tasks: 2, record: 2, pending: false }), 'c', id)).toBeUndefined();
    expect(zombieFencing(snapshot({ tasks: 2, exists: false }), 'c', id)).toBeUndefined();
  });
});
