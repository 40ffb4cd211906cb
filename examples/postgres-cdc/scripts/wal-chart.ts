/**
 * Turns the series written by the WAL retention test (`PG_CDC_DEMO_OUT=...`) into an SVG chart
 * and a Markdown table, with no dependencies.
 *
 * ```sh
 * PG_CDC_DEMO_OUT=/tmp/wal.json npx vitest run --project integration examples/postgres-cdc/test/wal-retention
 * npx tsx examples/postgres-cdc/scripts/wal-chart.ts /tmp/wal.json examples/postgres-cdc/wal-retention.svg
 * ```
 */
import { readFile, writeFile } from 'node:fs/promises';

/** What one task's metrics said about its slot at one moment (see test/wal-retention.int.test.ts). */
interface SlotSample {
  readonly unconfirmed: number;
  readonly behindMs: number | null;
  readonly offsetAgeMs: number;
}

interface Series {
  readonly seconds: number;
  readonly written: number;
  readonly samples: ReadonlyArray<{
    readonly t: number;
    readonly on: SlotSample;
    readonly off: SlotSample;
    readonly phase: 'writing' | 'after';
  }>;
}

const MB = 1024 * 1024;
const W = 720;
const H = 380;
const M = { left: 64, right: 24, top: 40, bottom: 52 };

/** The SVG chart: the unconfirmed WAL (the source-lag metric) in MB over time, one line per run. */
export function chart(series: Series): string {
  const { samples } = series;
  const tMax = Math.max(...samples.map((s) => s.t), 1);
  const yMax = niceCeil(Math.max(...samples.map((s) => Math.max(s.on.unconfirmed, s.off.unconfirmed))) / MB);
  const x = (t: number) => M.left + (t / tMax) * (W - M.left - M.right);
  const y = (mb: number) => H - M.bottom - (mb / yMax) * (H - M.top - M.bottom);
  const line = (pick: (s: Series['samples'][number]) => number) =>
    samples.map((s) => `${x(s.t).toFixed(1)},${y(pick(s) / MB).toFixed(1)}`).join(' ');
  const yTicks = Array.from({ length: 6 }, (_, i) => (yMax * i) / 5);
  const xStep = tMax > 60 ? 15 : 10;
  const xTicks = Array.from({ length: Math.floor(tMax / xStep) + 1 }, (_, i) => i * xStep);
  const stop = samples.find((s) => s.phase === 'after')?.t;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" font-family="sans-serif" font-size="12" role="img">`,
    `<title>WAL held unconfirmed by a PostgreSQL replication slot with and without heartbeat records</title>`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="14">WAL the replication slot holds unconfirmed (captured table idle, ${(series.written / MB).toFixed(0)} MB written elsewhere)</text>`,
    ...yTicks.map(
      (v) =>
        `<line x1="${M.left}" x2="${W - M.right}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>` +
        `<text x="${M.left - 6}" y="${y(v) + 4}" text-anchor="end">${v.toFixed(0)}</text>`,
    ),
    ...xTicks.map((t) => `<text x="${x(t)}" y="${H - M.bottom + 16}" text-anchor="middle">${t}</text>`),
    `<text x="${W / 2}" y="${H - 12}" text-anchor="middle">seconds since the unrelated writes began</text>`,
    `<text transform="translate(16 ${H / 2}) rotate(-90)" text-anchor="middle">unconfirmed WAL, MB (source lag metric)</text>`,
    `<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${H - M.bottom}" stroke="#333"/>`,
    `<line x1="${M.left}" x2="${W - M.right}" y1="${H - M.bottom}" y2="${H - M.bottom}" stroke="#333"/>`,
    stop === undefined
      ? ''
      : `<line x1="${x(stop)}" x2="${x(stop)}" y1="${M.top}" y2="${H - M.bottom}" stroke="#888" stroke-dasharray="4 4"/>` +
        `<text x="${x(stop) - 4}" y="${M.top + 12}" text-anchor="end" fill="#555">writes stop</text>`,
    `<polyline fill="none" stroke="#c0392b" stroke-width="2" points="${line((s) => s.off.unconfirmed)}"/>`,
    `<polyline fill="none" stroke="#27ae60" stroke-width="2" points="${line((s) => s.on.unconfirmed)}"/>`,
    `<rect x="${M.left + 12}" y="${M.top + 4}" width="12" height="3" fill="#c0392b"/>`,
    `<text x="${M.left + 30}" y="${M.top + 9}">heartbeats off</text>`,
    `<rect x="${M.left + 12}" y="${M.top + 22}" width="12" height="3" fill="#27ae60"/>`,
    `<text x="${M.left + 30}" y="${M.top + 27}">heartbeats on (heartbeat.interval.ms=1000)</text>`,
    '</svg>',
  ];
  return `${parts.filter((p) => p !== '').join('\n')}\n`;
}

/** The Markdown table: one row per sample. */
export function table(series: Series): string {
  const cells = (x: SlotSample) =>
    `${mb(x.unconfirmed)} | ${x.behindMs === null ? '–' : (x.behindMs / 1000).toFixed(1)} | ${sec(x.offsetAgeMs)}`;
  const rows = series.samples.map((s) => `| ${s.t}${s.phase === 'after' ? ' (after)' : ''} | ${cells(s.on)} | ${cells(s.off)} |`);
  return [
    '| t (s) | heartbeats on: unconfirmed MB | time behind s | offset age s | heartbeats off: unconfirmed MB | time behind s | offset age s |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
  ].join('\n');
}

function mb(bytes: number): string {
  return (bytes / MB).toFixed(1);
}

function sec(ms: number): string {
  return (ms / 1000).toFixed(0);
}

function niceCeil(v: number): number {
  const step = v > 200 ? 50 : v > 100 ? 25 : 10;
  return Math.max(step, Math.ceil(v / step) * step);
}

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: wal-chart.ts <series.json> <chart.svg>');
  process.exit(2);
}
const series = JSON.parse(await readFile(input, 'utf8')) as Series;
await writeFile(output, chart(series));
console.log(table(series));
