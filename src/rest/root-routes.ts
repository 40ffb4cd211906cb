import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RouteTable } from './route-table.js';

/** Where `GET /` gets the Kafka cluster id from; none: the worker runs without Kafka. */
export type ClusterIdSource = () => Promise<string | null>;

let packageInfo: { version: string; commit: string } | undefined;

/** Tributary's version, and the commit when the package records one (`gitHead`), else "unknown". */
function tributaryPackage(): { version: string; commit: string } {
  if (packageInfo) return packageInfo;
  packageInfo = { version: 'unknown', commit: 'unknown' };
  try {
    for (let dir = dirname(fileURLToPath(import.meta.url)); dirname(dir) !== dir; dir = dirname(dir)) {
      const file = join(dir, 'package.json');
      if (!existsSync(file)) continue;
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string; gitHead?: string };
      if (pkg.name !== 'tributary-connect') continue;
      packageInfo = { version: pkg.version ?? 'unknown', commit: pkg.gitHead ?? 'unknown' };
      break;
    }
  } catch {
    // No package.json to be found (e.g. bundled elsewhere): report unknown.
  }
  return packageInfo;
}

/** Adds `GET /` (version, commit, Kafka cluster id); `GET /health` is in observability-routes.ts. */
export function addRootRoutes(routes: RouteTable, clusterId: ClusterIdSource | undefined): void {
  routes.add('GET', '/', async () => {
    const { version, commit } = tributaryPackage();
    const id = clusterId ? await clusterId().catch(() => null) : null;
    return { version, commit, kafka_cluster_id: id };
  });
}
