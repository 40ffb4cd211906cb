/**
 * The distributed mode's work assignor at a scale one machine cannot run as a cluster: 1,000
 * simulated workers, 1,000 connectors of 10 tasks, through joins, graceful leaves (held, some
 * back in time, the rest freed at the deadline), deaths, config changes and a leader failover.
 * For each change: rebalance rounds to converge, tasks moved (they ran on a worker that stays
 * and now run on another), the lower bound for that change, the min/max tasks and connectors
 * per worker, and assignWork's cost per round (wall clock and this process's CPU time).
 *
 *   npx tsx bench/assignment.ts [workers=1000] [connectors=1000] [tasksEach=10]
 */
import { runScaleScenario } from '../test/helpers/assignment-cluster.js';

const [WORKERS = 1000, CONNECTORS = 1000, TASKS_EACH = 10] = process.argv.slice(2).map(Number);
const rows = runScaleScenario(WORKERS, CONNECTORS, TASKS_EACH);
const header = [
  'change',
  'rounds',
  'tasks moved',
  'lower bound',
  'tasks/worker',
  'connectors/worker',
  'held',
  'ms/round',
  'cpu ms/round',
];
const table = rows.map((r) => [
  r.change,
  String(r.rounds),
  String(r.moved),
  String(r.lowerBound),
  `${r.tasks[0]}-${r.tasks[1]}`,
  `${r.connectors[0]}-${r.connectors[1]}`,
  String(r.held),
  r.msPerRound.toFixed(0),
  r.cpuMsPerRound.toFixed(0),
]);
console.log(`| ${header.join(' | ')} |`);
console.log(`|${header.map(() => '---').join('|')}|`);
for (const row of table) console.log(`| ${row.join(' | ')} |`);
