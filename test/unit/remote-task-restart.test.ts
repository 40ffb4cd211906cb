/**
 * A task restart forwarded to another worker: the answer it got back becomes the error this
 * worker answers with. A 409 there (the hop limit; a rebalance moving the task) stays a 409.
 */
import { describe, expect, it } from 'vitest';
import { remoteTaskRestartError } from '../../src/cli/distributed.js';
import { errorResponse } from '../../src/rest/rest-error.js';

const answer = (status: number, message: string) => ({
  status,
  body: Buffer.from(JSON.stringify({ error_code: status, message })),
});

describe('remoteTaskRestartError', () => {
  it('relays a 409 of the worker it forwarded to as a 409 (retry), naming that worker and its reason', () => {
    const error = remoteTaskRestartError('http://w2:8083', 'c', 0, answer(409, 'forwarded here 2 times'));
    const body = errorResponse(error, 1024);
    expect(body.error_code).toBe(409);
    expect(body.message).toContain('http://w2:8083');
    expect(body.message).toContain('forwarded here 2 times');
  });

  it('answers any other refusal as a failed task start (500), and nothing when the restart was done', () => {
    expect(errorResponse(remoteTaskRestartError('http://w2:8083', 'c', 0, answer(500, 'boom')), 1024).error_code).toBe(500);
    expect(remoteTaskRestartError('http://w2:8083', 'c', 0, { status: 204, body: Buffer.alloc(0) })).toBeUndefined();
  });
});
