import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/api/errors.js';
import { parseMetricsListener, plainMetricsListener, resolveMetricsListener } from '../../src/metrics/metrics-listener.js';

describe('the metrics listener of its own, resolved from the worker config', () => {
  it('parses http and https listeners, an empty host meaning every interface and a bracketed IPv6 host', () => {
    expect(parseMetricsListener('http://127.0.0.1:9404')).toEqual({ scheme: 'http', host: '127.0.0.1', port: 9404 });
    expect(parseMetricsListener('HTTPS://:0/')).toEqual({ scheme: 'https', host: '0.0.0.0', port: 0 });
    expect(parseMetricsListener('http://[::1]:9404')).toEqual({ scheme: 'http', host: '::1', port: 9404 });
  });

  it('refuses a listener it cannot read, saying what is accepted', () => {
    for (const bad of ['127.0.0.1:9404', 'http://127.0.0.1:70000', 'ftp://h:1']) {
      expect(() => parseMetricsListener(bad)).toThrow(ConfigError);
      expect(() => parseMetricsListener(bad)).toThrow(/give one http:\/\/host:port or https:\/\/host:port/);
    }
  });

  it('takes a string listener as http only: https needs its key store', () => {
    expect(plainMetricsListener('http://127.0.0.1:0')).toMatchObject({ host: '127.0.0.1', port: 0, tls: undefined });
    expect(() => plainMetricsListener('https://127.0.0.1:0')).toThrow(/is https, which needs its key store/);
  });

  it('reports its own settings as problems when metrics.listeners is empty or http, so a typo never turns them off unseen', () => {
    const problems: string[] = [];
    expect(resolveMetricsListener({ 'metrics.basic.auth.user': 'prometheus' }, problems)).toBeUndefined();
    resolveMetricsListener(
      { 'metrics.listeners': 'http://127.0.0.1:0', 'metrics.listeners.https.ssl.keystore.location': '/k.pem' },
      problems,
    );
    expect(problems).toEqual([
      expect.stringMatching(/^metrics\.basic\.auth\.user: .* metrics\.listeners is empty/),
      expect.stringMatching(
        /^metrics\.listeners\.https\.ssl\.keystore\.location: metrics\.listeners is http:\/\/127\.0\.0\.1:0, not https:\/\//,
      ),
    ]);
  });
});
