import { describeSourceTask } from 'tributary-connect/testing';
import { PostgresCdcConnector, PostgresCdcTask } from '../src/index.js';

// The checks that run a task need a live PostgreSQL and real time (changes arrive from the
// server, not from the virtual clock); postgres-cdc.int.test.ts covers each of them against a
// cluster of its own. What is checked here needs no server.
const live = 'needs a running PostgreSQL; covered against a real cluster by test/postgres-cdc.int.test.ts';

describeSourceTask(PostgresCdcTask, {
  config: {
    connector: PostgresCdcConnector,
    valid: { tables: 'public.orders', 'topic.prefix': 'shop', 'slot.name': 'tributary_contract' },
    invalid: { tables: 'a.b.c', 'database.port': 'five' },
    invalidKeys: ['database.port'],
  },
  samples: [
    { partition: { slot: 'tributary_contract' }, offset: { lsn: '0/16B3748' } },
    { partition: { slot: 'tributary_contract' }, offset: { lsn: '1A/FF000028', changes: 3 } },
  ],
  skip: {
    restartAfterCrash: live,
    restartAfterStop: live,
    restartWithHeartbeats: `${live} ('resumes from a heartbeat offset with only the changes committed after it')`,
    heartbeats: live,
    stop: live,
    farFutureOffset: `an offset ahead of the server's WAL is refused at start with TASK_START_FAILED, on purpose (${live})`,
  },
});
