import { describeSourceTask } from 'tributary-connect/testing';
import { DatagenConnector, DatagenTask } from '../src/index.js';

describeSourceTask(DatagenTask, {
  config: {
    connector: DatagenConnector,
    valid: { topic: 'gen', rate: '0', 'max.records': '10', partitions: '2' },
    invalid: { rate: 'fast', partitions: '0' },
    invalidKeys: ['topic', 'rate', 'partitions'],
  },
  skip: { farFutureOffset: 'a synthetic sequence goes on after any number it is given' },
});
