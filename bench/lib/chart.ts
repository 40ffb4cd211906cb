/**
 * Hand-written SVG charts. {@link svgChart}: the main table's medians in three panels (steady
 * records/s, CPU seconds, peak RSS), one bar per contender, value at the end of each bar;
 * {@link svgLineChart}: the series. No dependencies.
 */
import type { Summary } from './summary.js';

const COLORS: Record<string, string> = {
  connect: '#d9534f',
  'connect-xmx': '#f0ad4e',
  tributary: '#2b7bb9',
  'tributary-librdkafka': '#17becf',
  kafkajs: '#5cb85c',
  'librdkafka-raw': '#9467bd',
  perf: '#999999',
};

interface Panel {
  readonly title: string;
  readonly value: (s: Summary) => number;
  readonly format: (n: number) => string;
}

const xml = (s: string): string => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

export function svgChart(summaries: readonly Summary[], title: string): string {
  const panels: Panel[] = [
    {
      title: 'steady records/s ↑',
      value: (s) => s.steadyPerSec,
      format: (n) => Math.round(n).toLocaleString('en-US'),
    },
    { title: 'CPU seconds ↓', value: (s) => s.cpuS, format: (n) => n.toFixed(1) },
    { title: 'peak RSS MiB ↓', value: (s) => s.peakRssMiB, format: (n) => n.toFixed(0) },
  ];
  const labelWidth = 230;
  const panelWidth = 260;
  const gap = 30;
  const barHeight = 22;
  const barGap = 8;
  const top = 56;
  const width = labelWidth + panels.length * (panelWidth + gap);
  const height = top + summaries.length * (barHeight + barGap) + 30;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">${xml(title)}</text>`,
  ];
  summaries.forEach((s, i) => {
    const y = top + i * (barHeight + barGap);
    out.push(`<text x="10" y="${y + barHeight * 0.7}">${xml(s.label)}</text>`);
  });
  panels.forEach((panel, p) => {
    const x0 = labelWidth + p * (panelWidth + gap);
    const max = Math.max(...summaries.map((s) => panel.value(s)).filter(Number.isFinite), 1e-9);
    const usable = panelWidth - 70;
    out.push(`<text x="${x0}" y="${top - 12}" font-weight="bold">${xml(panel.title)}</text>`);
    out.push(`<line x1="${x0}" y1="${top - 4}" x2="${x0}" y2="${height - 26}" stroke="#333333"/>`);
    summaries.forEach((s, i) => {
      const v = panel.value(s);
      const y = top + i * (barHeight + barGap);
      const w = Number.isFinite(v) ? Math.max(1, (v / max) * usable) : 0;
      out.push(
        `<rect x="${x0}" y="${y}" width="${w.toFixed(1)}" height="${barHeight}" fill="${COLORS[s.contender] ?? '#777777'}"/>`,
      );
      out.push(
        `<text x="${(x0 + w + 4).toFixed(1)}" y="${y + barHeight * 0.7}">${Number.isFinite(v) ? panel.format(v) : 'n/a'}</text>`,
      );
    });
  });
  out.push(`<text x="10" y="${height - 8}" fill="#555555">↑ higher is better, ↓ lower is better; medians</text>`);
  out.push('</svg>', '');
  return out.join('\n');
}

/** One line of a {@link svgLineChart} panel. */
export interface ChartLine {
  readonly name: string;
  /** One value per x label; NaN leaves a gap. */
  readonly values: readonly number[];
}

/** One panel of a {@link svgLineChart}. */
export interface LinePanel {
  readonly title: string;
  readonly lines: readonly ChartLine[];
  readonly format: (n: number) => string;
}

const LINE_COLORS = ['#d9534f', '#2b7bb9', '#17becf', '#5cb85c', '#9467bd', '#999999', '#f0ad4e', '#8c564b'];

/**
 * Side-by-side line panels over the same categorical x axis (the series' points, evenly spaced:
 * 1, 100, 10,000, 100,000 partitions are steps, not a scale), y from 0, one colour per line
 * name across panels, a legend below. No dependencies.
 */
export function svgLineChart(title: string, xName: string, xLabels: readonly string[], panels: readonly LinePanel[]): string {
  const panelWidth = 380;
  const panelHeight = 240;
  const left = 70;
  const gap = 40;
  const top = 50;
  const names = [...new Set(panels.flatMap((p) => p.lines.map((l) => l.name)))];
  const legendRows = Math.ceil(names.length / 2);
  const width = left + panels.length * (panelWidth + gap);
  const height = top + panelHeight + 50 + legendRows * 18 + 10;
  const color = (name: string) => LINE_COLORS[names.indexOf(name) % LINE_COLORS.length] as string;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">${xml(title)}</text>`,
  ];
  panels.forEach((panel, p) => {
    const x0 = left + p * (panelWidth + gap);
    const max = Math.max(...panel.lines.flatMap((l) => l.values).filter(Number.isFinite), 1e-9) * 1.1;
    const xAt = (i: number) => x0 + (xLabels.length === 1 ? panelWidth / 2 : (i / (xLabels.length - 1)) * (panelWidth - 20) + 10);
    const yAt = (v: number) => top + panelHeight - (v / max) * panelHeight;
    out.push(`<text x="${x0}" y="${top - 12}" font-weight="bold">${xml(panel.title)}</text>`);
    out.push(`<rect x="${x0}" y="${top}" width="${panelWidth}" height="${panelHeight}" fill="none" stroke="#333333"/>`);
    for (let t = 0; t <= 4; t++) {
      const v = (max / 1.1) * (t / 4);
      const y = yAt(v);
      out.push(`<line x1="${x0}" y1="${y.toFixed(1)}" x2="${x0 + panelWidth}" y2="${y.toFixed(1)}" stroke="#e5e5e5"/>`);
      out.push(`<text x="${x0 - 4}" y="${(y + 4).toFixed(1)}" text-anchor="end" fill="#555555">${xml(panel.format(v))}</text>`);
    }
    xLabels.forEach((label, i) => {
      out.push(`<text x="${xAt(i).toFixed(1)}" y="${top + panelHeight + 16}" text-anchor="middle">${xml(label)}</text>`);
    });
    out.push(
      `<text x="${x0 + panelWidth / 2}" y="${top + panelHeight + 34}" text-anchor="middle" fill="#555555">${xml(xName)}</text>`,
    );
    for (const line of panel.lines) {
      const pts = line.values.map((v, i) => (Number.isFinite(v) ? `${xAt(i).toFixed(1)},${yAt(v).toFixed(1)}` : undefined));
      const runs: string[][] = [[]];
      for (const pt of pts) {
        if (pt === undefined) runs.push([]);
        else (runs.at(-1) as string[]).push(pt);
      }
      for (const run of runs.filter((r) => r.length > 1))
        out.push(`<polyline points="${run.join(' ')}" fill="none" stroke="${color(line.name)}" stroke-width="2"/>`);
      for (const pt of pts.filter((x): x is string => x !== undefined)) {
        const [cx, cy] = pt.split(',');
        out.push(`<circle cx="${cx}" cy="${cy}" r="3.5" fill="${color(line.name)}"/>`);
      }
    }
  });
  names.forEach((name, i) => {
    const x = left + (i % 2) * 380;
    const y = top + panelHeight + 56 + Math.floor(i / 2) * 18;
    out.push(`<rect x="${x}" y="${y - 10}" width="14" height="4" fill="${color(name)}"/>`);
    out.push(`<text x="${x + 20}" y="${y - 5}">${xml(name)}</text>`);
  });
  out.push('</svg>', '');
  return out.join('\n');
}
