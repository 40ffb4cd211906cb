import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/api/logger.js';
import { createCliLogger, prettyLine, resolveLogSettings } from '../../src/cli/log-output.js';
import { type KafkajsLogEntry, kafkajsLogCreator } from '../../src/kafka/kafkajs-log.js';

const tty = { env: {}, isTTY: true };
const pipe = { env: {}, isTTY: false };

describe('log.level and log.format', () => {
  it('defaults to info, pretty on a terminal and JSON otherwise', () => {
    expect(resolveLogSettings({}, 'w', tty)).toEqual({ level: 'info', format: 'pretty' });
    expect(resolveLogSettings({}, 'w', pipe)).toEqual({ level: 'info', format: 'json' });
    expect(resolveLogSettings({ 'log.format': 'json' }, 'w', tty).format).toBe('json');
    expect(resolveLogSettings({ 'log.level': 'DEBUG' }, 'w', pipe).level).toBe('debug');
  });

  it('takes TRIBUTARY_LOG_LEVEL and TRIBUTARY_LOG_FORMAT when the worker file sets none', () => {
    const env = { TRIBUTARY_LOG_LEVEL: 'warn', TRIBUTARY_LOG_FORMAT: 'pretty' };
    expect(resolveLogSettings({}, 'w', { env, isTTY: false })).toEqual({ level: 'warn', format: 'pretty' });
    expect(resolveLogSettings({ 'log.level': 'error' }, 'w', { env, isTTY: false }).level).toBe('error');
  });

  it('rejects a bad value naming the file, the key and the accepted values', () => {
    expect(() => resolveLogSettings({ 'log.level': 'verbose' }, 'worker config w.properties', pipe)).toThrow(
      'Invalid worker config w.properties: log.level: "verbose" is not a log level; accepted: trace, debug, info, warn, error, fatal, silent',
    );
    expect(() => resolveLogSettings({ 'log.format': 'text' }, 'w', pipe)).toThrow(
      'log.format: "text" is not a log format; accepted: pretty, json',
    );
    expect(() => resolveLogSettings({}, 'w', { env: { TRIBUTARY_LOG_LEVEL: 'loud' }, isTTY: false })).toThrow(
      'TRIBUTARY_LOG_LEVEL (environment): "loud" is not a log level',
    );
  });
});

describe('the pretty format', () => {
  it('writes one readable line per entry: time, level, where, message, fields', () => {
    const line = prettyLine(
      JSON.stringify({
        level: 30,
        time: Date.UTC(2026, 0, 1, 12, 0, 1, 250),
        connector: 'pg',
        task: 0,
        event: 'x',
        msg: 'task started',
        committedOffsets: 3,
      }),
      'info',
    );
    expect(line).toBe('12:00:01.250 INFO  [pg/0] task started  committedOffsets=3\n');
  });

  it("shows an error's message, and its stack only at debug", () => {
    const json = JSON.stringify({
      level: 50,
      time: 0,
      msg: 'flush failed',
      err: { message: 'disk full', stack: 'Error: disk full\n    at x' },
    });
    expect(prettyLine(json, 'info')).toBe('00:00:00.000 ERROR flush failed: disk full\n');
    expect(prettyLine(json, 'debug')).toContain('\n  Error: disk full\n      at x');
  });

  it("shows an error's code, and an error value that is not an Error (a thrown string) instead of dropping it", () => {
    const coded = JSON.stringify({
      level: 50,
      time: 0,
      msg: 'final flush',
      err: { type: 'TributaryError', message: 'flush failed: disk full', code: 'OFFSET_FLUSH_FAILED' },
    });
    expect(prettyLine(coded, 'info')).toBe('00:00:00.000 ERROR final flush: OFFSET_FLUSH_FAILED flush failed: disk full\n');
    const thrown = JSON.stringify({ level: 40, time: 0, connector: 'c', msg: 'stop() threw; ignored', err: 'boom' });
    expect(prettyLine(thrown, 'info')).toBe('00:00:00.000 WARN  [c] stop() threw; ignored: boom\n');
    const other = JSON.stringify({ level: 40, time: 0, msg: 'odd', err: { reason: 42 } });
    expect(prettyLine(other, 'info')).toBe('00:00:00.000 WARN  odd: {"reason":42}\n');
  });

  it('is what the CLI logger writes when asked, JSON lines otherwise', () => {
    const out: string[] = [];
    createCliLogger({ level: 'info', format: 'pretty' }, (l) => out.push(l)).info({ a: 1 }, 'hello');
    createCliLogger({ level: 'info', format: 'json' }, (l) => out.push(l)).info({ a: 1 }, 'hello');
    createCliLogger({ level: 'warn', format: 'json' }, (l) => out.push(l)).info({ a: 1 }, 'dropped');
    expect(out[0]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}hello {2}a=1\n$/);
    expect(JSON.parse(out[1] as string)).toMatchObject({ level: 30, msg: 'hello', a: 1 });
    expect(out).toHaveLength(2);
  });
});

function recorder(): { logger: Logger; lines: Array<[string, string | undefined]> } {
  const lines: Array<[string, string | undefined]> = [];
  const logger: Logger = {
    debug: (_f, m) => lines.push(['debug', m]),
    info: (_f, m) => lines.push(['info', m]),
    warn: (_f, m) => lines.push(['warn', m]),
    error: (_f, m) => lines.push(['error', m]),
    child: () => logger,
  };
  return { logger, lines };
}

const entry = (level: number, message: string, fields: Record<string, unknown> = {}): KafkajsLogEntry => ({
  level,
  log: { message, ...fields },
});

describe('kafkajs log lines', () => {
  it('puts the retriable conditions of a healthy start at debug', () => {
    const { logger, lines } = recorder();
    const log = kafkajsLogCreator(logger)();
    log(entry(1, 'Response Metadata(key: 3, version: 6)', { error: 'This server is not the leader for that topic-partition' }));
    log(entry(1, "The coordinator is loading and hence can't process requests", { retryCount: 0 }));
    log(entry(1, 'Response GroupCoordinator(key: 10, version: 2)', { error: 'The group coordinator is not available' }));
    // Distributed mode's group membership answers these itself.
    log(entry(1, 'Response Heartbeat(key: 12, version: 1)', { error: 'The group is rebalancing, so a rejoin is needed' }));
    log(entry(1, 'Response CreateTopics(key: 19, version: 3)', { error: 'Topic with this name already exists' }));
    expect(lines.map(([level]) => level)).toEqual(['debug', 'debug', 'debug', 'debug', 'debug']);
  });

  it('turns an unreachable broker into one clear warning, and its retries into debug lines', () => {
    const { logger, lines } = recorder();
    let now = 0;
    const log = kafkajsLogCreator(logger, { now: () => now, repeatAfterMs: 60_000 })();
    for (let i = 0; i < 6; i++) {
      log(entry(1, 'Connection error: connect ECONNREFUSED 127.0.0.1:1', { broker: '127.0.0.1:1', stack: 'Error: ...' }));
      log(
        entry(
          1,
          'Failed to connect to seed broker, trying another broker from the list: Connection error: connect ECONNREFUSED 127.0.0.1:1',
          { retryCount: i },
        ),
      );
    }
    expect(lines.filter(([level]) => level !== 'debug')).toEqual([
      [
        'warn',
        'cannot connect to Kafka: connect ECONNREFUSED 127.0.0.1:1; kafkajs keeps retrying (check bootstrap.servers and that the broker runs)',
      ],
    ]);
    now = 61_000;
    log(entry(1, 'Connection error: connect ECONNREFUSED 127.0.0.1:1', { broker: '127.0.0.1:1' }));
    expect(lines.filter(([level]) => level === 'warn')).toHaveLength(2);
  });

  it('keeps other errors at their level, their stack at debug', () => {
    const { logger, lines } = recorder();
    const log = kafkajsLogCreator(logger)();
    log(entry(1, 'Not authorized to access topics: [Topic authorization failed]', { stack: 'Error: ...' }));
    log(entry(2, 'Could not delete topics'));
    log(entry(4, 'Starting'));
    expect(lines).toEqual([
      ['debug', 'Not authorized to access topics: [Topic authorization failed]'],
      ['error', 'Not authorized to access topics: [Topic authorization failed]'],
      ['warn', 'Could not delete topics'],
      ['debug', 'Starting'],
    ]);
  });
});
