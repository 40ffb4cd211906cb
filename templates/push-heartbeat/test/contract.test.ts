import { describeSourceTask } from 'tributary-connect/testing';
import { ChangesConnector, ChangesTask } from '../src/index.js';

// The checks every source task should pass, heartbeats included.
describeSourceTask(ChangesTask, {
  config: {
    connector: ChangesConnector,
    valid: { topic: 'changes', 'simulated.changes': '6', 'simulated.interval.ms': '100' },
    invalid: { 'buffer.capacity': '0' },
    invalidKeys: ['topic', 'buffer.capacity'],
  },
  farFutureOffset: () => ({ position: Number.MAX_SAFE_INTEGER }),
});
