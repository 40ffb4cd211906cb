import type pg from 'pg';
import type { PostgresCdcConfig } from './postgres-cdc-config.js';

/** node-postgres settings for the configured server: `connection.string` when set, else the `database.*` keys. */
export function clientConfig(config: PostgresCdcConfig): pg.ClientConfig {
  const uri = config['connection.string'];
  if (uri !== '') return { connectionString: uri, application_name: 'tributary-postgres-cdc' };
  return {
    host: config['database.hostname'],
    port: config['database.port'],
    user: config['database.user'],
    password: config['database.password'] === '' ? undefined : config['database.password'],
    database: config['database.dbname'],
    application_name: 'tributary-postgres-cdc',
  };
}

/** Where the task reads from, for messages: `host:port/database`, never the password. */
export function describeServer(config: PostgresCdcConfig): string {
  const uri = config['connection.string'];
  if (uri !== '') {
    try {
      const url = new URL(uri);
      return `${url.host}${url.pathname}`;
    } catch {
      return 'the server of connection.string';
    }
  }
  return `${config['database.hostname']}:${config['database.port']}/${config['database.dbname']}`;
}
