import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/api/errors.js';
import type { Logger } from '../../src/api/logger.js';
import { describeFailure } from '../../src/cli/standalone.js';
import { maskConfig, maskingLogger, maskTaskConfig, maskUrlPasswords } from '../../src/runtime/secret-masking.js';

describe('secret masking', () => {
  it('hides the password of every URL in a text, keeping scheme, user, host and path', () => {
    const cases: Array<[string, string]> = [
      ['postgres://app:secret@db:5432/orders', 'postgres://app:[hidden]@db:5432/orders'],
      ['jdbc:postgresql://app:p%40ss@db/orders?ssl=true', 'jdbc:postgresql://app:[hidden]@db/orders?ssl=true'],
      ['mongodb://u:p@ss@h1:1,h2:2/db', 'mongodb://u:[hidden]@h1:1,h2:2/db'],
      ['a://u:x@h1, b://v:y@h2', 'a://u:[hidden]@h1, b://v:[hidden]@h2'],
      ['cannot connect to "redis://:tok3n@cache:6379": refused', 'cannot connect to "redis://:[hidden]@cache:6379": refused'],
      ['postgres://app@db/orders', 'postgres://app@db/orders'],
      ['postgres://app:@db/orders', 'postgres://app:@db/orders'],
      ['http://db:5432/x?u=a:b', 'http://db:5432/x?u=a:b'],
      ['no url here: a:b@c', 'no url here: a:b@c'],
    ];
    for (const [text, masked] of cases) expect(maskUrlPasswords(text), text).toBe(masked);
  });

  it("hides a URL password holding ',', ';' or a quote (legal in user info), whole, in configs and task configs", () => {
    for (const password of ['s3cr,et', 's3cr;et', "it's-s3cret", 'a,b;c'] as const) {
      const url = `postgres://app:${password}@db/orders`;
      expect(maskUrlPasswords(url), url).toBe('postgres://app:[hidden]@db/orders');
      expect(maskConfig({ 'connection.url': url }, new Set())).toEqual({ 'connection.url': 'postgres://app:[hidden]@db/orders' });
      const trace = `Error: login refused (${password}) at ${url}`;
      expect(maskTaskConfig(trace, { 'connection.url': url }, new Set())).toBe(
        'Error: login refused ([hidden]) at postgres://app:[hidden]@db/orders',
      );
    }
    expect(maskUrlPasswords('a://u:x@h1,b://v:y,z@h2')).toBe('a://u:[hidden]@h1,b://v:[hidden]@h2');
  });

  it('hides a URL password quoted in the start-up failure the tributary command prints', () => {
    const invalid = new ConfigError("config of connector 'dg'", [
      'tasks.max: expected integer >= 1, got "postgres://app:s3cret-pw@db/x"',
    ]);
    expect(describeFailure(invalid)).toBe(
      `CONFIG_INVALID: Invalid config of connector 'dg': tasks.max: expected integer >= 1, got "postgres://app:[hidden]@db/x"`,
    );
    const plain = describeFailure(new Error('cannot reach postgres://app:s3cret-pw@db/x'));
    expect(plain).toContain('cannot reach postgres://app:[hidden]@db/x');
    expect(plain).not.toContain('s3cret-pw');
  });

  it('shows a URL password as [hidden] in a connector config, whether or not a password key is set too', () => {
    const passwords = new Set(['connection.password']);
    expect(
      maskConfig(
        {
          'connection.url': 'postgres://app:secret@db/orders',
          'connection.password': 'secret',
          'other.url': 'https://ci:t0ken@example.test/repo',
          topic: 'orders',
        },
        passwords,
      ),
    ).toEqual({
      'connection.url': 'postgres://app:[hidden]@db/orders',
      'connection.password': '[hidden]',
      'other.url': 'https://ci:[hidden]@example.test/repo',
      topic: 'orders',
    });
  });

  it('masks a URL password in task configs and traces, also where the password is quoted without its URL', () => {
    const config = { 'connection.url': 'postgres://app:url-secret@db/orders' };
    const trace = 'Error: password authentication failed (url-secret) for postgres://app:url-secret@db/orders\n    at x';
    expect(maskTaskConfig({ url: config['connection.url'], trace }, config, new Set())).toEqual({
      url: 'postgres://app:[hidden]@db/orders',
      trace: 'Error: password authentication failed ([hidden]) for postgres://app:[hidden]@db/orders\n    at x',
    });
  });

  it('masks URL passwords in every log line of a connector whose config has one, errors included', () => {
    const lines: string[] = [];
    const sink: Logger = {
      debug: (f, m) => lines.push(JSON.stringify([f, m])),
      info: (f, m) => lines.push(JSON.stringify([f, m])),
      warn: (f, m) => lines.push(JSON.stringify([f, m])),
      error: (f, m) => lines.push(JSON.stringify([f, m])),
      child: () => sink,
    };
    const log = maskingLogger(sink, { 'connection.url': 'postgres://app:url-secret@db/orders' }, new Set());
    log.info({ url: 'postgres://app:url-secret@db/orders' }, 'connecting');
    log.error({ err: new Error('auth failed with url-secret') }, 'failed for postgres://app:url-secret@db/orders');
    expect(lines.join('\n')).not.toContain('url-secret');
    expect(lines.join('\n')).toContain('postgres://app:[hidden]@db/orders');
  });
});
