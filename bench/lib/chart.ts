/**
 * A hand-written SVG bar chart of the medians: four panels (records/s start to exit, steady
 * records/s, CPU seconds, peak RSS), one bar per contender, value at the end of each bar.
 * No dependencies.
 */
import type { Summary } from './summary.js';

const COLORS: Record<string, string> = {
  connect: '#d9534f',
  'connect-xmx': '#f0ad4e',
  tributary: '#2b7bb9',
  kafkajs: '#5cb85c',
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
      title: 'records/s (higher is better)',
      value: (s) => s.recordsPerSec,
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
