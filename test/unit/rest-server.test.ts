import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveRestOptions } from '../../src/rest/rest-options.js';
import { RestServer } from '../../src/rest/rest-server.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';

describe('REST settings (worker config)', () => {
  it('listens on 127.0.0.1:8083 by default and is off with listeners= empty', async () => {
    expect(await resolveRestOptions({})).toMatchObject({
      host: '127.0.0.1',
      port: 8083,
      maxBodyBytes: 1_048_576,
      requestTimeoutMs: 90_000,
      basicAuth: undefined,
    });
    expect(await resolveRestOptions({ listeners: '' })).toBeUndefined();
    expect(await resolveRestOptions({ listeners: 'http://:9000' })).toMatchObject({ host: '0.0.0.0', port: 9000 });
    expect(await resolveRestOptions({ listeners: 'HTTP://[::1]:0/' })).toMatchObject({ host: '::1', port: 0 });
  });

  it('refuses listeners it cannot serve and half-configured authentication, naming each problem', async () => {
    await expect(resolveRestOptions({ listeners: 'https://localhost:8443' })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      problems: [expect.stringContaining("https needs the server's key and certificate")],
    });
    await expect(resolveRestOptions({ listeners: 'http://a:1,http://b:2' })).rejects.toMatchObject({
      problems: [expect.stringContaining('one listener is supported')],
    });
    await expect(resolveRestOptions({ listeners: 'localhost:8083' })).rejects.toMatchObject({
      problems: [expect.stringContaining('accepted: http://host:port or https://host:port')],
    });
    await expect(resolveRestOptions({ 'rest.basic.auth.user': 'admin' })).rejects.toMatchObject({
      problems: [expect.stringContaining('no password')],
    });
    await expect(resolveRestOptions({ 'rest.request.max.bytes': 'lots' })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });

  it('reads the basic auth password from a file, without its trailing newline, and never shows it in errors', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-rest-'));
    await writeFile(join(dir, 'pw'), 'from-file\n');
    expect(
      (await resolveRestOptions({ 'rest.basic.auth.user': 'u', 'rest.basic.auth.password.file': join(dir, 'pw') }))?.basicAuth,
    ).toEqual({ user: 'u', password: 'from-file' });
    const error = await resolveRestOptions({
      'rest.basic.auth.user': 'u',
      'rest.basic.auth.password': 'inline-secret',
      'rest.basic.auth.password.file': join(dir, 'pw'),
    }).catch((e: Error) => e);
    expect(String((error as Error).message)).toContain('not both');
    expect(String((error as Error).message)).not.toContain('inline-secret');
  });
});

describe('RestServer', () => {
  it('listens, sets the worker id to the advertised host:port, answers over HTTP, and says when the port is taken', async () => {
    const worker = new Worker({
      config: {},
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => {
        throw new Error('unused');
      },
    });
    const options = await resolveRestOptions({ listeners: 'http://127.0.0.1:0', 'rest.advertised.host.name': 'worker-1' });
    if (!options) throw new Error('REST is on');
    const server = await RestServer.start(worker, options);
    try {
      const port = Number(new URL(server.url).port);
      expect(worker.workerId).toBe(`worker-1:${port}`);
      const res = await fetch(`${server.url}/connectors`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.json()).toEqual([]);
      await expect(RestServer.start(worker, { ...options, port })).rejects.toMatchObject({
        code: 'CONFIG_INVALID',
        message: expect.stringContaining('set listeners= empty to turn the REST API off'),
      });
    } finally {
      await server.close();
    }
  });
});
