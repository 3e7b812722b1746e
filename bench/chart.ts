// Small dependency-free SVG charts for the report and the README.
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

export function barChart(title: string, rows: { label: string; value: number; note?: string }[], unit: string): string {
  const w = 720,
    rowH = 26,
    left = 150,
    top = 40,
    h = top + rows.length * rowH + 30;
  const max = Math.max(1e-9, ...rows.map((r) => r.value));
  const plotW = w - left - 160;
  let svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif" font-size="13"><rect width="100%" height="100%" fill="#fff"/>`;
  svg += `<text x="10" y="22" font-size="15" font-weight="bold">${esc(title)}</text>`;
  rows.forEach((r, i) => {
    const y = top + i * rowH;
    const bw = (r.value / max) * plotW;
    svg += `<text x="${left - 8}" y="${y + 16}" text-anchor="end">${esc(r.label)}</text>`;
    svg += `<rect x="${left}" y="${y + 3}" width="${bw.toFixed(1)}" height="${rowH - 8}" fill="${i === 0 ? '#999' : '#3b82f6'}"/>`;
    svg += `<text x="${left + bw + 6}" y="${y + 16}">${r.value.toFixed(1)} ${esc(unit)}${r.note ? `  ${esc(r.note)}` : ''}</text>`;
  });
  return `${svg}</svg>\n`;
}

export function lineChart(title: string, xLabel: string, yLabel: string, series: { name: string; color: string; points: [number, number][]; dashed?: boolean }[]): string {
  const w = 720,
    h = 420,
    l = 60,
    r = 170,
    t = 40,
    b = 50;
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]));
  const xMin = Math.min(...xs),
    xMax = Math.max(...xs),
    yMax = Math.max(1.2, ...ys) * 1.1;
  const X = (x: number) => l + ((x - xMin) / Math.max(1e-9, xMax - xMin)) * (w - l - r);
  const Y = (y: number) => h - b - (y / yMax) * (h - t - b);
  let svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="#fff"/>`;
  svg += `<text x="10" y="22" font-size="15" font-weight="bold">${esc(title)}</text>`;
  for (let i = 0; i <= 5; i++) {
    const y = (yMax / 5) * i;
    svg += `<line x1="${l}" x2="${w - r}" y1="${Y(y)}" y2="${Y(y)}" stroke="#eee"/><text x="${l - 6}" y="${Y(y) + 4}" text-anchor="end">${y.toFixed(1)}</text>`;
  }
  svg += `<line x1="${l}" x2="${w - r}" y1="${Y(1)}" y2="${Y(1)}" stroke="#999" stroke-dasharray="2,3"/>`;
  for (const x of [...new Set(xs)]) svg += `<text x="${X(x)}" y="${h - b + 16}" text-anchor="middle">${x}</text>`;
  svg += `<text x="${(l + w - r) / 2}" y="${h - 12}" text-anchor="middle">${esc(xLabel)}</text>`;
  svg += `<text x="14" y="${(t + h - b) / 2}" transform="rotate(-90 14 ${(t + h - b) / 2})" text-anchor="middle">${esc(yLabel)}</text>`;
  series.forEach((s, i) => {
    const pts = s.points.map(([x, y]) => `${X(x).toFixed(1)},${Y(y).toFixed(1)}`).join(' ');
    svg += `<polyline points="${pts}" fill="none" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6,4"' : ''}/>`;
    for (const [x, y] of s.points) svg += `<circle cx="${X(x)}" cy="${Y(y)}" r="3" fill="${s.color}"/>`;
    svg += `<line x1="${w - r + 12}" x2="${w - r + 36}" y1="${t + 10 + i * 20}" y2="${t + 10 + i * 20}" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6,4"' : ''}/><text x="${w - r + 42}" y="${t + 14 + i * 20}">${esc(s.name)}</text>`;
  });
  return `${svg}</svg>\n`;
}
