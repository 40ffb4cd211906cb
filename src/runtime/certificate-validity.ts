import type { Logger } from '../api/logger.js';

/**
 * The validity dates of the certificates a worker presents (its Kafka clients' key stores, the
 * REST listener's), checked at start and watched while it runs.
 */

/** How close to its `notAfter` a key store's certificate is warned about: 14 days, in milliseconds. */
export const CERTIFICATE_EXPIRY_WARNING_MS = 14 * 86_400_000;

/** One certificate of a key store, with what names it and its dates. */
export interface CertificateValidity {
  /**
   * The setting that gave the store, as written: `ssl.keystore.location`,
   * `producer.ssl.keystore.location`, `listeners.https.ssl.keystore.location`, or
   * `ssl.keystore.certificate.chain` for inline PEM.
   */
  readonly store: string;
  /** The store's file; empty for certificates given inline. */
  readonly file: string;
  /** The certificate's subject on one line, e.g. `CN=worker-1, O=Example`. */
  readonly subject: string;
  /** Its place in the chain presented: 0 is the certificate of the key (the leaf). */
  readonly position: number;
  /** `notBefore`, epoch milliseconds. */
  readonly notBefore: number;
  /** `notAfter`, epoch milliseconds. */
  readonly notAfter: number;
}

/** `2026-12-07T11:00:00Z`: an ISO date to the second, in UTC. */
export function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** `the certificate in /etc/tls/worker.pem (subject CN=worker-1)`, or `certificate 2 of the chain in ...`. */
export function describeCertificate(c: CertificateValidity): string {
  const which = c.position === 0 ? 'the certificate' : `certificate ${c.position + 1} of the chain`;
  return `${which}${c.file === '' ? '' : ` in ${c.file}`} (subject ${c.subject})`;
}

/**
 * The one-line problem of a certificate that is not valid at `now` (past its `notAfter`, or
 * before its `notBefore`), naming the setting, the file, the subject, the date and today;
 * undefined for one valid now.
 */
export function certificateDateProblem(c: CertificateValidity, now: number): string | undefined {
  if (now > c.notAfter) {
    return `${c.store}: ${describeCertificate(c)} expired: notAfter ${isoSeconds(c.notAfter)}, today is ${isoSeconds(now)}; renew it (TLS peers refuse a certificate past its notAfter, whoever signed it)`;
  }
  if (now < c.notBefore) {
    return `${c.store}: ${describeCertificate(c)} is not valid yet: notBefore ${isoSeconds(c.notBefore)}, today is ${isoSeconds(now)}; use a certificate valid now, or check this machine's clock`;
  }
  return undefined;
}

/**
 * The warning for a certificate valid at `now` that expires within `windowMs` (default
 * {@link CERTIFICATE_EXPIRY_WARNING_MS}); undefined otherwise (an invalid one is
 * {@link certificateDateProblem}'s).
 */
export function certificateExpiryWarning(
  c: CertificateValidity,
  now: number,
  windowMs: number = CERTIFICATE_EXPIRY_WARNING_MS,
): string | undefined {
  if (now > c.notAfter || now < c.notBefore || c.notAfter - now > windowMs) return undefined;
  return `${c.store}: ${describeCertificate(c)} expires in ${timeLeft(c.notAfter - now)}: notAfter ${isoSeconds(c.notAfter)}, today is ${isoSeconds(now)}; renew it before then`;
}

/** `4 days and 23 hours`, `5 hours`, `12 minutes`. */
function timeLeft(ms: number): string {
  const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`;
  const days = Math.floor(ms / 86_400_000);
  const hours = Math.floor((ms % 86_400_000) / 3_600_000);
  if (days > 0) return hours > 0 ? `${plural(days, 'day')} and ${plural(hours, 'hour')}` : plural(days, 'day');
  if (hours > 0) return plural(hours, 'hour');
  return plural(Math.floor(ms / 60_000), 'minute');
}

/** `certificates` without repeats: the same store, file and certificate resolved for several clients counts once. */
export function distinctCertificates(certificates: Iterable<CertificateValidity>): CertificateValidity[] {
  const seen = new Map<string, CertificateValidity>();
  for (const c of certificates) {
    const key = JSON.stringify([c.store, c.file, c.subject, c.position, c.notBefore, c.notAfter]);
    if (!seen.has(key)) seen.set(key, c);
  }
  return [...seen.values()];
}

/**
 * Logs a WARN (`event: certificate.expiring`) for each of `certificates` that expires within
 * {@link CERTIFICATE_EXPIRY_WARNING_MS} of `now`; returns those it warned about.
 */
export function warnExpiringCertificates(
  logger: Logger,
  certificates: Iterable<CertificateValidity>,
  now: number,
): CertificateValidity[] {
  const warned: CertificateValidity[] = [];
  for (const c of certificates) {
    const warning = certificateExpiryWarning(c, now);
    if (warning === undefined) continue;
    logger.warn(
      { event: 'certificate.expiring', store: c.store, file: c.file, subject: c.subject, notAfter: isoSeconds(c.notAfter) },
      warning,
    );
    warned.push(c);
  }
  return warned;
}
