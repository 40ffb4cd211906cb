import { type ErrorCode, isTributaryError } from '../api/errors.js';
import { maskUrlPasswords } from '../runtime/secret-masking.js';

/** Kafka Connect's error body: `error_code` is the HTTP status. */
export interface ErrorBody {
  readonly error_code: number;
  readonly message: string;
}

/** An error the REST layer answers with a given HTTP status (a bad request body, an unknown route, ...). */
export class RestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'RestError';
  }
}

/** HTTP status of each Tributary error code the worker raises on a request; anything else is 500. */
const STATUS_OF_CODE: Partial<Record<ErrorCode, number>> = {
  CONFIG_INVALID: 400,
  PLUGIN_NOT_FOUND: 400,
  // Kafka Connect answers 500 to offsets its validation rejects; a client error is a 400 here.
  OFFSET_DECODE: 400,
  OFFSET_REJECTED: 400,
  CONNECTOR_NOT_STOPPED: 400,
  CONNECTOR_NOT_FOUND: 404,
  TASK_NOT_FOUND: 404,
  CONNECTOR_EXISTS: 409,
  TOPIC_TRACKING_DISABLED: 403,
  WORKER_STOPPING: 503,
  // Kafka Connect's answer when no leader is known; here only after a bounded wait for one.
  REBALANCE_IN_PROGRESS: 409,
};

/** Fastify's own errors that are the client's doing, with the message to answer. */
function fastifyError(e: { code?: unknown; statusCode?: unknown; message: string }, maxBodyBytes: number): ErrorBody | undefined {
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return {
        error_code: 413,
        message: `Request body is larger than ${maxBodyBytes} bytes, the limit set by rest.request.max.bytes`,
      };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { error_code: 415, message: 'Unsupported Content-Type: send the body as JSON with Content-Type: application/json' };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { error_code: 400, message: 'Request body size does not match its Content-Length header' };
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return { error_code: e.statusCode, message: e.message };
  }
  return undefined;
}

/**
 * The response for whatever a request failed with: its status and Kafka Connect's error body.
 * Invalid connector configs get Kafka Connect's message, one problem per line. URL passwords
 * in the message are shown as `[hidden]`.
 */
export function errorResponse(e: unknown, maxBodyBytes: number): ErrorBody {
  const body = unmaskedErrorResponse(e, maxBodyBytes);
  // A message may quote a config value; a URL password in it must not reach the client.
  return { error_code: body.error_code, message: maskUrlPasswords(body.message) };
}

function unmaskedErrorResponse(e: unknown, maxBodyBytes: number): ErrorBody {
  if (e instanceof RestError) return { error_code: e.status, message: e.message };
  if (isTributaryError(e)) {
    const status = STATUS_OF_CODE[e.code] ?? 500;
    const problems = (e as { problems?: unknown }).problems;
    if (e.code === 'CONFIG_INVALID' && Array.isArray(problems)) {
      return {
        error_code: status,
        message: `Connector configuration is invalid and contains the following ${problems.length} error(s):\n${problems.join('\n')}\nYou can also find the above list of errors at the endpoint \`/connector-plugins/{connectorType}/config/validate\``,
      };
    }
    return { error_code: status, message: e.message };
  }
  if (e instanceof Error) {
    const known = fastifyError(e as Error & { code?: unknown; statusCode?: unknown }, maxBodyBytes);
    if (known) return known;
    return { error_code: 500, message: e.message };
  }
  return { error_code: 500, message: String(e) };
}
