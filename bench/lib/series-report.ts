/**
 * The series as Markdown tables and SVG charts (bench/lib/series.ts measures them): one table
 * and one chart per series, the chart written beside the results file as `<date>-<series>.svg`.
 */
import { svgLineChart } from './chart.js';
import type { HeartbeatResult } from './heartbeat-run.js';
import type { RunResult } from './measure-run.js';
import type { SeriesResult } from './series.js';

const int = (n: number | undefined): string =>
  n !== undefined && Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–';
const fix = (n: number | undefined, d = 0): string => (n !== undefined && Number.isFinite(n) ? n.toFixed(d) : '–');
const xLabel = (id: SeriesResult['id'], x: number): string =>
  id === 'sizes' ? (x >= 1024 && x % 1024 === 0 ? `${x / 1024} KiB` : `${x} B`) : x.toLocaleString('en-US');
const failed = (r: RunResult): string => (r.ok ? '' : ` (FAILED: ${r.problems.join('; ')})`);

/** Lines (in order of appearance) and x values of a series. */
function axes(s: SeriesResult): { lines: string[]; xs: number[] } {
  return { lines: [...new Set(s.points.map((p) => p.line))], xs: [...new Set(s.points.map((p) => p.x))] };
}

function find(s: SeriesResult, line: string, x: number): RunResult | undefined {
  return s.points.find((p) => p.line === line && p.x === x)?.result;
}

/** The Markdown section of one series (table, chart link, notes). */
export function seriesMarkdown(s: SeriesResult, chartFile: string | undefined): string {
  const { lines, xs } = axes(s);
  const out: string[] = [`### ${s.title}`, ''];
  const rss = s.id === 'partitions' || s.id === 'rss';
  const head = [`| ${s.xName}`];
  const rule = ['|---:'];
  for (const l of lines) {
    head.push(`${l}: steady records/s`);
    rule.push('---:');
    if (s.id === 'sizes') {
      head.push(`${l}: MB/s`);
      rule.push('---:');
    }
    if (rss) {
      head.push(`${l}: peak RSS MiB`);
      rule.push('---:');
    }
  }
  out.push(`${head.join(' | ')} |`, `${rule.join('|')}|`);
  const problems: string[] = [];
  for (const x of xs) {
    const row = [`| ${xLabel(s.id, x)}`];
    for (const l of lines) {
      const r = find(s, l, x);
      if (r !== undefined && !r.ok) problems.push(`${l} at ${xLabel(s.id, x)}${failed(r)}`);
      const mark = r !== undefined && !r.ok ? ' ✗' : '';
      row.push(`${int(r?.steadyPerSec)}${mark}`);
      if (s.id === 'sizes') row.push(fix(r?.steadyPerSec === undefined ? undefined : (r.steadyPerSec * x) / 1e6, 1));
      if (rss) row.push(fix(r?.peakRssMiB));
    }
    out.push(`${row.join(' | ')} |`);
  }
  out.push('');
  if (problems.length > 0) out.push(`✗ failed a check (figures shown anyway): ${problems.join('; ')}`, '');
  if (s.slow !== undefined && s.slow.length > 0) {
    out.push(
      '| slow broker run | quota bytes/s | records written | steady records/s | RSS MiB at 25% / 50% / 75% / 100% of the run | peak RSS MiB | in flight at most | input file |',
      '|---|---:|---:|---:|---|---:|---|---:|',
    );
    for (const w of s.slow) {
      const r = w.result;
      out.push(
        `| ${w.line}${failed(r)} | ${int(w.quotaBytesPerSec)} | ${int(r.records)} | ${int(r.steadyPerSec)} | ${w.rssAtQuarters.map((m) => fix(m)).join(' / ')} | ` +
          `${fix(r.peakRssMiB)} | ${int(w.inFlightRecords)} records × ${w.lineBytes + 1} B = ${fix((w.inFlightRecords * (w.lineBytes + 1)) / 2 ** 20, 1)} MiB of values | ${fix(w.inputBytes / 2 ** 20)} MiB |`,
      );
    }
    out.push('');
  }
  if (chartFile !== undefined) out.push(`![${s.title}](${chartFile})`, '');
  for (const n of s.notes) out.push(`- ${n}`);
  out.push('');
  return out.join('\n');
}

/** The chart of one series: steady records/s, and peak RSS where the series is about memory. */
export function seriesChart(s: SeriesResult, date: string): string {
  const { lines, xs } = axes(s);
  const values = (f: (r: RunResult) => number | undefined) =>
    lines.map((name) => ({ name, values: xs.map((x) => f(find(s, name, x) as RunResult) ?? Number.NaN) }));
  const panels = [
    {
      title: 'steady records/s',
      lines: values((r) => r?.steadyPerSec),
      format: (n: number) => (n >= 10_000 ? `${Math.round(n / 1000)}k` : Math.round(n).toLocaleString('en-US')),
    },
  ];
  if (s.id === 'partitions' || s.id === 'rss')
    panels.push({ title: 'peak RSS MiB', lines: values((r) => r?.peakRssMiB), format: (n: number) => n.toFixed(0) });
  return svgLineChart(
    `${s.title}, ${date}`,
    s.xName,
    xs.map((x) => xLabel(s.id, x)),
    panels,
  );
}

/** The heartbeat figures as a chart: p50, p99 and max deviation, from the tick and from the broker. */
export function heartbeatChart(h: HeartbeatResult, date: string): string {
  return svgLineChart(
    `Heartbeat interval jitter |interval − 1000 ms| under full load (${int(h.dataPerSec)} records/s), ${date}`,
    'percentile',
    ['p50', 'p99', 'max'],
    [
      {
        title: 'ms',
        lines: [
          { name: 'timer tick (value)', values: [h.timer.p50, h.timer.p99, h.timer.max] },
          { name: 'broker append (LogAppendTime)', values: [h.appended.p50, h.appended.p99, h.appended.max] },
        ],
        format: (n) => n.toFixed(0),
      },
    ],
  );
}
