/** One GET with node's own http and https clients, for tests of a listener's TLS and authentication. */
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** What a GET was answered. */
export interface GetAnswer {
  readonly status: number;
  readonly body: string;
  readonly headers: Record<string, string | string[] | undefined>;
}

/**
 * GETs `url` without connection reuse. Over https it trusts only the CA in the PEM file `ca`
 * and presents the client key pair of the PEM key store `keystore` when given. Rejects when the
 * connection or handshake fails (e.g. a refused client certificate).
 */
export function tlsGet(
  url: string,
  opts: { ca?: string; keystore?: string; headers?: Record<string, string> } = {},
): Promise<GetAnswer> {
  const pem = opts.keystore ? readFileSync(opts.keystore, 'utf8') : undefined;
  const request = url.startsWith('https:') ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        ...(opts.ca ? { ca: readFileSync(opts.ca, 'utf8') } : {}),
        ...(pem ? { key: pem, cert: pem } : {}),
        headers: opts.headers,
        agent: false,
      },
      (res) => {
        let body = '';
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The `Authorization` header of HTTP basic authentication. */
export function basicAuthorization(user: string, password: string): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` };
}
