import type { ServerOptions } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { RestTls } from './rest-options.js';

/**
 * Node's https server options for an https listener (the REST API's or the metrics
 * listener's): its key and certificate, the CA of client certificates, and
 * `ssl.client.auth` (`required` refuses the handshake without a trusted certificate).
 */
export function httpsServerOptions(tls: RestTls): ServerOptions {
  return {
    ...(tls.key !== undefined ? { key: tls.key } : {}),
    ...(tls.cert !== undefined ? { cert: tls.cert } : {}),
    ...(tls.pfx !== undefined ? { pfx: tls.pfx } : {}),
    ...(tls.passphrase !== undefined ? { passphrase: tls.passphrase } : {}),
    ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
    requestCert: tls.clientAuth !== 'none',
    rejectUnauthorized: tls.clientAuth === 'required',
  };
}

/**
 * With `ssl.client.auth=requested`: no certificate is fine, an untrusted one is not (as Java's
 * `wantClientAuth`). Returns the message of the 401 for a connection whose client gave a
 * certificate that is not trusted, else undefined.
 */
export function refusedClientCertificate(tls: RestTls | undefined, socket: TLSSocket): string | undefined {
  if (tls?.clientAuth !== 'requested') return undefined;
  if (socket.authorized || Object.keys(socket.getPeerCertificate?.() ?? {}).length === 0) return undefined;
  return `Client certificate not trusted: ${socket.authorizationError ?? 'unknown issuer'}`;
}
