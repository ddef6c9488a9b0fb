/**
 * Line charts as standalone SVG, written by hand (no dependency): axes with round ticks, an
 * optional logarithmic x axis, step or straight lines, and a legend. Enough for the plots of
 * docs/benchmarks.md.
 */

export interface Series {
  readonly name: string;
  /** [x, y] in data units, x ascending. */
  readonly points: readonly (readonly [number, number])[];
  readonly color?: string;
  readonly dashed?: boolean;
  /** Draw as a staircase (cumulative counts). */
  readonly step?: boolean;
}

export interface ChartOptions {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly Series[];
  readonly xLog?: boolean;
  readonly width?: number;
  readonly height?: number;
}

const palette = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];
const maxPoints = 600;

export function lineChart(options: ChartOptions): string {
  const width = options.width ?? 720;
  // The legend sits between the title and the plot, one line per series: it never hides a curve.
  const legendHeight = 18 * options.series.length;
  const height = (options.height ?? 400) + legendHeight;
  const margin = { left: 70, right: 20, top: 44 + legendHeight, bottom: 56 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const all = options.series.flatMap((s) => s.points);
  const xs = all.map(([x]) => x).filter((x) => !options.xLog || x > 0);
  const ys = all.map(([, y]) => y);
  const xMinData = xs.length === 0 ? 0 : Math.min(...xs);
  const xMaxData = xs.length === 0 ? 1 : Math.max(...xs);
  const yData = ys.length === 0 ? 1 : Math.max(...ys, 0);
  // Room above the highest point, so a curve that ends there does not run along the frame.
  const yMax = yData / niceCeil(yData) > 0.97 ? niceCeil(yData) + niceStep(niceCeil(yData)) : niceCeil(yData);
  const xTicks = options.xLog ? logTicks(xMinData, xMaxData) : linearTicks(0, niceCeil(xMaxData));
  const xMin = options.xLog ? xTicks[0]! : 0;
  const xMax = xTicks[xTicks.length - 1]!;
  const yTicks = linearTicks(0, yMax);
  const sx = (x: number) => {
    const t = options.xLog
      ? (Math.log10(Math.max(x, xMin)) - Math.log10(xMin)) / (Math.log10(xMax) - Math.log10(xMin) || 1)
      : (x - xMin) / (xMax - xMin || 1);
    return margin.left + t * plotW;
  };
  const sy = (y: number) => margin.top + plotH - (y / (yMax || 1)) * plotH;

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
  );
  out.push(`<rect width="${width}" height="${height}" fill="white"/>`);
  out.push(`<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${escape(options.title)}</text>`);
  for (const y of yTicks) {
    out.push(`<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${f(sy(y))}" y2="${f(sy(y))}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${margin.left - 6}" y="${f(sy(y) + 4)}" text-anchor="end">${label(y)}</text>`);
  }
  for (const x of xTicks) {
    out.push(`<line x1="${f(sx(x))}" x2="${f(sx(x))}" y1="${margin.top}" y2="${margin.top + plotH}" stroke="#f0f0f0"/>`);
    out.push(`<text x="${f(sx(x))}" y="${margin.top + plotH + 16}" text-anchor="middle">${label(x)}</text>`);
  }
  out.push(`<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`);
  out.push(`<text x="${margin.left + plotW / 2}" y="${height - 14}" text-anchor="middle">${escape(options.xLabel)}</text>`);
  out.push(`<text transform="translate(16 ${margin.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escape(options.yLabel)}</text>`);
  options.series.forEach((series, i) => {
    const color = series.color ?? palette[i % palette.length]!;
    const points = thin(series.points.filter(([x]) => !options.xLog || x > 0));
    if (points.length === 0) return;
    const path: string[] = [];
    points.forEach(([x, y], j) => {
      if (j === 0) path.push(`M${f(sx(x))},${f(sy(y))}`);
      else if (series.step) path.push(`H${f(sx(x))}V${f(sy(y))}`);
      else path.push(`L${f(sx(x))},${f(sy(y))}`);
    });
    out.push(`<path d="${path.join('')}" fill="none" stroke="${color}" stroke-width="2"${series.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    const ly = 48 + i * 18;
    const lx = margin.left + 12;
    out.push(
      `<line x1="${lx}" x2="${lx + 24}" y1="${ly - 4}" y2="${ly - 4}" stroke="${color}" stroke-width="2"${series.dashed ? ' stroke-dasharray="6 4"' : ''}/>`,
    );
    out.push(`<text x="${lx + 30}" y="${ly}">${escape(series.name)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

/** Keeps at most `maxPoints` points, evenly by index, always the first and the last. */
function thin(points: readonly (readonly [number, number])[]): (readonly [number, number])[] {
  if (points.length <= maxPoints) return [...points];
  const step = (points.length - 1) / (maxPoints - 1);
  return Array.from({ length: maxPoints }, (_, i) => points[Math.round(i * step)]!);
}

function niceStep(range: number): number {
  const raw = range / 5;
  const power = 10 ** Math.floor(Math.log10(raw || 1));
  const fraction = raw / power;
  return (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * power;
}

function niceCeil(value: number): number {
  if (value <= 0) return 1;
  const step = niceStep(value);
  return Math.ceil(value / step) * step;
}

function linearTicks(min: number, max: number): number[] {
  const step = niceStep(max - min);
  const ticks: number[] = [];
  for (let v = min; v <= max + step / 1e6; v += step) ticks.push(Math.round(v / step) * step);
  return ticks;
}

function logTicks(min: number, max: number): number[] {
  const ticks: number[] = [];
  for (let power = Math.floor(Math.log10(min)); power <= Math.ceil(Math.log10(max)); power++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** power;
      if (v >= min / 5 && v <= max * 5) ticks.push(v);
    }
  }
  const lo = ticks.filter((t) => t <= min).at(-1) ?? ticks[0]!;
  const hi = ticks.find((t) => t >= max) ?? ticks.at(-1)!;
  return ticks.filter((t) => t >= lo && t <= hi);
}

function label(v: number): string {
  if (Math.abs(v) >= 1000) return `${+(v / 1000).toPrecision(3)}k`;
  return String(+v.toPrecision(3));
}

const f = (v: number) => v.toFixed(1);

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
