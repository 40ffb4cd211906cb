/**
 * The status page in a real headless Chromium (Debian's `chromium`, driven by playwright-core;
 * no browser is downloaded): a worker runs the datagen connector, the page shows its states,
 * offsets and charts, and they change as the connector runs. `STATUS_PAGE_SCREENSHOT=path`
 * keeps the screenshot there (docs/status-page.png is made so).
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import { runStandalone, type StandaloneWorker } from '../../src/cli/standalone.js';

const CHROMIUM = '/usr/bin/chromium';
const quiet = { debug() {}, info() {}, warn() {}, error() {}, child: () => quiet };
const props = (o: Record<string, string>) =>
  Object.entries(o)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');

// CI installs chromium (.ci/run): there a missing browser fails the test instead of skipping it.
const describeBrowser = existsSync(CHROMIUM) || process.env.CI === 'true' ? describe : describe.skip;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

describeBrowser('status page at /ui in headless Chromium', () => {
  it('shows connector and task states, committed offsets and charts, and they change as the connector runs', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'status-page-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await writeFile(
      join(dir, 'worker.properties'),
      props({
        listeners: 'http://127.0.0.1:0',
        'embedded.output': join(dir, 'out'),
        'offset.storage.file.filename': join(dir, 'offsets.json'),
        'offset.flush.interval.ms': '300',
        'metrics.history.interval.ms': '300',
      }),
    );
    await writeFile(
      join(dir, 'datagen.properties'),
      props({
        name: 'datagen',
        'connector.class': './examples/datagen/src/index.ts#DatagenConnector',
        topic: 'events',
        rate: '40',
        partitions: '2',
        'tasks.max': '1',
        'heartbeat.interval.ms': '500',
      }),
    );
    const worker: StandaloneWorker = await runStandalone({
      workerConfigPath: join(dir, 'worker.properties'),
      connectorConfigPaths: [join(dir, 'datagen.properties')],
      logger: quiet,
    });
    cleanups.push(() => worker.stop());

    const context: BrowserContext = await chromium.launchPersistentContext(join(dir, 'profile'), {
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
      ],
      viewport: { width: 1200, height: 760 },
    });
    cleanups.push(() => context.close());
    const page = context.pages()[0] ?? (await context.newPage());
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    const response = await page.goto(`${worker.rest?.url}/ui`);
    expect(response?.status()).toBe(200);

    const connector = page.locator('section[data-connector="datagen"]');
    await connector.locator('h2 .state[data-state="RUNNING"]').waitFor({ timeout: 20_000 });
    const task = connector.locator('[data-task="datagen/0"]');
    await task.locator('.state[data-state="RUNNING"]').waitFor();

    // Committed offsets of both source partitions appear, then move on.
    const offsets = task.locator('[data-field="offset"]');
    await expect.poll(() => offsets.count(), { timeout: 20_000 }).toBe(2);
    const firstOffsets = await offsets.allTextContents();
    await expect.poll(async () => (await offsets.allTextContents()).join(), { timeout: 20_000 }).not.toBe(firstOffsets.join());

    // The throughput chart gets a line, and the line changes as samples come.
    const line = task.locator('svg[data-chart="throughput"] polyline');
    await line.waitFor({ timeout: 20_000 });
    const firstPoints = await line.getAttribute('points');
    await expect.poll(() => line.getAttribute('points'), { timeout: 20_000 }).not.toBe(firstPoints);
    await expect(task.locator('svg[data-chart="offset age"] polyline').count()).resolves.toBe(1);
    const written = Number((await task.locator('[data-field="written"]').textContent())?.replace(/,/g, ''));
    expect(written).toBeGreaterThan(0);

    const shot = process.env.STATUS_PAGE_SCREENSHOT ?? join(dir, 'status-page.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect(existsSync(shot)).toBe(true);
    expect(errors).toEqual([]);
  });
  it('shows a connector name with HTML in it as text: no element is made of it and no script runs', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'status-page-xss-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const name = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>';
    await writeFile(
      join(dir, 'worker.properties'),
      props({
        listeners: 'http://127.0.0.1:0',
        'embedded.output': join(dir, 'out'),
        'offset.storage.file.filename': join(dir, 'offsets.json'),
        'offset.flush.interval.ms': '300',
        'metrics.history.interval.ms': '300',
      }),
    );
    await writeFile(
      join(dir, 'datagen.properties'),
      props({
        name,
        'connector.class': './examples/datagen/src/index.ts#DatagenConnector',
        topic: 'events',
        rate: '40',
        'tasks.max': '1',
      }),
    );
    const worker: StandaloneWorker = await runStandalone({
      workerConfigPath: join(dir, 'worker.properties'),
      connectorConfigPaths: [join(dir, 'datagen.properties')],
      logger: quiet,
    });
    cleanups.push(() => worker.stop());
    const context: BrowserContext = await chromium.launchPersistentContext(join(dir, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
    });
    cleanups.push(() => context.close());
    const page = context.pages()[0] ?? (await context.newPage());
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${worker.rest?.url}/ui`);
    const task = page.locator('.task .state[data-state="RUNNING"]');
    await task.waitFor({ timeout: 20_000 });
    await expect.poll(() => page.locator('[data-field="offset"]').count(), { timeout: 20_000 }).toBe(1);
    expect(await page.locator('section.connector h2').first().textContent()).toContain(name);
    expect(await page.locator('main img, main script').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(errors).toEqual([]);
  });
});
