/**
 * A web page of another origin, in a real headless Chromium (Debian's `chromium`, driven by
 * playwright-core), tries to drive a worker on 127.0.0.1: restart, pause, stop, reset offsets,
 * delete. Nothing it sends is carried out. Pages of the worker itself (the status page's origin)
 * and of an origin in `access.control.allow.origin` still work. The pages come from a small
 * static server on another 127.0.0.1 port: as `http://127.0.0.1:<port>` (same site as the
 * worker, another origin), `http://evil.test:<port>` (another site) and
 * `http://allowed.test:<port>` (allowed); Chromium resolves both names to 127.0.0.1. A page of
 * `http://rebind.test:<worker port>` (a name that resolves to 127.0.0.1, as after DNS rebinding)
 * is the worker's own origin to the browser, and is refused for its Host.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runStandalone, type StandaloneWorker } from '../../src/cli/standalone.js';
import { type LoggedLine, recordingLogger } from '../helpers/recording-logger.js';

const CHROMIUM = '/usr/bin/chromium';
const props = (o: Record<string, string>) =>
  Object.entries(o)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');

// CI installs chromium (.ci/run): there a missing browser fails the test instead of skipping it.
const describeBrowser = existsSync(CHROMIUM) || process.env.CI === 'true' ? describe : describe.skip;

/**
 * What the other origin's page does: every request that would change the worker, each as a
 * `no-cors` fetch (sent without asking; the answer is opaque) and as a CORS fetch (which the
 * browser preflights unless it is a simple POST), and how each came out.
 */
const PAGE = `<!doctype html><meta charset="utf-8"><title>another origin</title>
<script>
window.attack = async (worker) => {
  const requests = [
    ['POST', '/connectors/datagen/restart'],
    ['POST', '/connectors/datagen/restart?includeTasks=true'],
    ['POST', '/connectors/datagen/tasks/0/restart'],
    ['PUT', '/connectors/datagen/pause'],
    ['PUT', '/connectors/datagen/stop'],
    ['DELETE', '/connectors/parked/offsets'],
    ['DELETE', '/connectors/datagen'],
    ['DELETE', '/connectors/parked'],
  ];
  const outcomes = [];
  for (const mode of ['no-cors', 'cors']) {
    for (const [method, path] of requests) {
      try {
        const res = await fetch(worker + path, { method, mode });
        outcomes.push(mode + ' ' + method + ' ' + path + ': ' + (res.type === 'opaque' ? 'opaque' : res.status));
      } catch (e) {
        outcomes.push(mode + ' ' + method + ' ' + path + ': ' + e.name);
      }
    }
  }
  return outcomes;
};
window.call = async (worker, method, path) => {
  const res = await fetch(worker + path, { method, mode: 'cors' });
  return { status: res.status, body: await res.text() };
};
</script>`;

const lines: LoggedLine[] = [];
const cleanups: Array<() => Promise<void>> = [];
let worker: StandaloneWorker;
let api: string;
let pagePort: number;
let browser: import('playwright-core').BrowserContext;

const get = async (path: string) => {
  const res = await fetch(`${api}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & { offsets?: unknown[] } };
};
const state = async (name: string) => ((await get(`/connectors/${name}/status`)).body.connector as { state: string }).state;
const PARKED_OFFSETS = [{ partition: { task: 0, sequence: 0 }, offset: { seq: 7 } }];

/** Requests the worker answered since `from`, other than reads: `METHOD path status`. */
const changesAnswered = (from: number) =>
  lines
    .slice(from)
    .filter((l) => l.fields.event === 'rest.request' && !['GET', 'HEAD'].includes(String(l.fields.method)))
    .map((l) => `${l.fields.method} ${l.fields.path} ${l.fields.status}`);

describeBrowser('REST API and web pages of other origins, in headless Chromium', () => {
  beforeAll(async () => {
    const pages = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    });
    await new Promise<void>((r) => pages.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => pages.close(() => r())));
    pagePort = (pages.address() as AddressInfo).port;

    const dir = await mkdtemp(join(tmpdir(), 'rest-cross-origin-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await writeFile(
      join(dir, 'worker.properties'),
      props({
        listeners: 'http://127.0.0.1:0',
        'embedded.output': join(dir, 'out'),
        'offset.storage.file.filename': join(dir, 'offsets.json'),
        'offset.flush.interval.ms': '300',
        'access.control.allow.origin': `http://allowed.test:${pagePort}`,
        'access.control.allow.methods': 'GET,POST,PUT,DELETE',
      }),
    );
    await writeFile(
      join(dir, 'datagen.properties'),
      props({
        name: 'datagen',
        'connector.class': './examples/datagen/src/index.ts#DatagenConnector',
        topic: 'events',
        rate: '20',
        'tasks.max': '1',
      }),
    );
    worker = await runStandalone({
      workerConfigPath: join(dir, 'worker.properties'),
      connectorConfigPaths: [join(dir, 'datagen.properties')],
      logger: recordingLogger(lines),
    });
    cleanups.push(() => worker.stop());
    api = worker.rest?.url as string;
    // A STOPPED connector with offsets: a DELETE of its offsets would reset them.
    const parked = await fetch(`${api}/connectors`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'parked',
        config: { 'connector.class': './examples/datagen/src/index.ts#DatagenConnector', topic: 'parked' },
        initial_state: 'STOPPED',
        offsets: PARKED_OFFSETS,
      }),
    });
    expect(parked.status).toBe(201);
    for (const deadline = Date.now() + 20_000; (await state('datagen')) !== 'RUNNING'; ) {
      if (Date.now() > deadline) throw new Error(`datagen is ${await state('datagen')}, not RUNNING, after 20 s`);
      await new Promise((r) => setTimeout(r, 100));
    }

    browser = await chromium.launchPersistentContext(join(dir, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--host-resolver-rules=MAP evil.test 127.0.0.1, MAP allowed.test 127.0.0.1, MAP rebind.test 127.0.0.1',
      ],
    });
    cleanups.push(() => browser.close());
  }, 60_000);

  afterAll(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  });

  for (const [what, host] of [
    ['another port of the same host (same site)', '127.0.0.1'],
    ['another site', 'evil.test'],
  ] as const) {
    it(`carries out nothing a page of ${what} sends: the connector keeps RUNNING, offsets are kept, both connectors stay`, async () => {
      const page = await browser.newPage();
      await page.goto(`http://${host}:${pagePort}/`);
      const from = lines.length;
      const outcomes = await page.evaluate(
        (w) => (globalThis as unknown as { attack(w: string): Promise<string[]> }).attack(w),
        api,
      );
      await page.close();
      // Every no-cors POST reaches the worker (the browser sends it without asking); each is refused.
      expect(outcomes.filter((o) => o.startsWith('no-cors POST')).every((o) => o.endsWith(': opaque'))).toBe(true);
      const answered = changesAnswered(from);
      expect(answered.filter((a) => a.startsWith('POST '))).toHaveLength(6);
      expect(answered.filter((a) => !a.startsWith('OPTIONS ') && !a.endsWith(' 403'))).toEqual([]);
      // The preflights of the CORS PUTs and DELETEs are refused too, so the browser never sends those.
      expect(answered.filter((a) => a.startsWith('PUT ') || a.startsWith('DELETE '))).toEqual([]);
      expect(outcomes.filter((o) => o.startsWith('cors ') && !o.startsWith('cors POST'))).toEqual(
        expect.arrayContaining([expect.stringMatching(/: TypeError$/)]),
      );
      expect(lines.slice(from).filter((l) => String(l.fields.event).startsWith('connector.'))).toEqual([]);
      expect(await state('datagen')).toBe('RUNNING');
      expect(await state('parked')).toBe('STOPPED');
      expect((await get('/connectors/parked/offsets')).body.offsets).toEqual(PARKED_OFFSETS);
      expect(((await get('/connectors')).body as unknown as string[]).sort()).toEqual(['datagen', 'parked']);
    });
  }

  it('carries out what a page of the worker itself sends (the status page origin)', async () => {
    const page = await browser.newPage();
    expect((await page.goto(`${api}/ui`))?.status()).toBe(200);
    const send = (method: string, path: string) =>
      page.evaluate(async ([m, p]) => (await fetch(p as string, { method: m as string })).status, [method, path] as const);
    expect(await send('PUT', '/connectors/datagen/pause')).toBe(202);
    await expect.poll(() => state('datagen'), { timeout: 10_000 }).toBe('PAUSED');
    expect(await send('PUT', '/connectors/datagen/resume')).toBe(202);
    await expect.poll(() => state('datagen'), { timeout: 10_000 }).toBe('RUNNING');
    await page.close();
  });

  it('answers nothing to a page whose DNS name was re-pointed at the worker (DNS rebinding), reads included', async () => {
    const page = await browser.newPage();
    const rebound = api.replace('127.0.0.1', 'rebind.test');
    const from = lines.length;
    // To the browser, the page and the worker are one origin: it sends Sec-Fetch-Site: same-origin and would show the answers.
    expect((await page.goto(`${rebound}/ui`))?.status()).toBe(403);
    expect(await page.textContent('body')).toContain('DNS rebinding');
    const send = (method: string, path: string) =>
      page.evaluate(async ([m, p]) => (await fetch(p as string, { method: m as string })).status, [method, path] as const);
    expect(await send('PUT', '/connectors/datagen/pause')).toBe(403);
    expect(await send('GET', '/connectors/datagen/config')).toBe(403);
    await page.close();
    expect(changesAnswered(from)).toEqual(['PUT /connectors/datagen/pause 403']);
    expect(await state('datagen')).toBe('RUNNING');
  });

  it('carries out what a page of an origin in access.control.allow.origin sends, and lets it read the answers', async () => {
    const page = await browser.newPage();
    await page.goto(`http://allowed.test:${pagePort}/`);
    const call = (method: string, path: string) =>
      page.evaluate(
        ([w, m, p]) =>
          (globalThis as unknown as { call(w: string, m: string, p: string): Promise<{ status: number; body: string }> }).call(
            w as string,
            m as string,
            p as string,
          ),
        [api, method, path] as const,
      );
    expect((await call('PUT', '/connectors/datagen/pause')).status).toBe(202);
    await expect.poll(() => state('datagen'), { timeout: 10_000 }).toBe('PAUSED');
    expect((await call('PUT', '/connectors/datagen/resume')).status).toBe(202);
    const status = await call('GET', '/connectors/datagen/status');
    expect(JSON.parse(status.body).name).toBe('datagen');
    expect((await call('DELETE', '/connectors/parked/offsets')).status).toBe(200);
    expect((await get('/connectors/parked/offsets')).body.offsets).toEqual([]);
    expect((await call('DELETE', '/connectors/parked')).status).toBe(204);
    expect((await get('/connectors')).body).toEqual(['datagen']);
    await page.close();
  });
});
