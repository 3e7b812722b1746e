// The image a several-line next edit is drawn as (the way Continue draws its next edits): the new lines
// in the editor's font, on a tinted panel in the theme's colours, as an SVG data URI that an `after`
// decoration shows beside the lines it replaces. VS Code gives an extension no theme colour values,
// only the theme's kind, so each kind has its palette, chosen to match the default themes' diff colours.

export type ThemeKind = 'light' | 'dark' | 'highContrast' | 'highContrastLight';

export interface BlockPalette {
  background: string;
  /** The inserted-text tint over the background. */
  tint: string;
  foreground: string;
  border: string;
  /** The "… N more lines" note. */
  muted: string;
}

export const PALETTES: Record<ThemeKind, BlockPalette> = {
  // Dark Modern: editor #1F1F1F, text #CCCCCC, diffEditor.insertedTextBackground #9CCC2C33.
  dark: { background: '#1f1f1f', tint: 'rgba(156,204,44,0.20)', foreground: '#d4d4d4', border: 'rgba(156,204,44,0.55)', muted: '#8b949e' },
  // Light Modern: editor #FFFFFF, text #3B3B3B, insertedTextBackground #9CCC2C40.
  light: { background: '#ffffff', tint: 'rgba(156,204,44,0.25)', foreground: '#1f1f1f', border: 'rgba(90,130,20,0.6)', muted: '#6e7781' },
  highContrast: { background: '#000000', tint: 'rgba(0,0,0,0)', foreground: '#ffffff', border: '#33ff2e', muted: '#c0c0c0' },
  highContrastLight: { background: '#ffffff', tint: 'rgba(0,0,0,0)', foreground: '#000000', border: '#374e06', muted: '#404040' },
};

export interface BlockFont {
  family: string;
  /** px */
  size: number;
  /** px per line, as the editor lays them out. */
  lineHeight: number;
}

/** The editor's line height in px from its settings (0: VS Code's own ratio; below 8: a multiple of the font size). */
export function editorLineHeight(fontSize: number, lineHeightSetting: number, mac = false): number {
  if (lineHeightSetting <= 0) return Math.round((mac ? 1.5 : 1.35) * fontSize);
  if (lineHeightSetting < 8) return Math.round(lineHeightSetting * fontSize);
  return Math.round(lineHeightSetting);
}

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** Tabs as spaces (an SVG has no tab stops). */
export function expandTabs(line: string, tabSize: number): string {
  let out = '';
  for (const ch of line) {
    if (ch === '\t') out += ' '.repeat(tabSize - (out.length % tabSize));
    else out += ch;
  }
  return out;
}

export interface BlockImage {
  uri: string;
  width: number;
  height: number;
}

/**
 * The SVG of `lines` (and a "… N more lines" row when there were more). Monospace width is taken as
 * 0.6 em a character, which holds for the usual editor fonts to a few per cent; the panel is padded.
 */
export function blockImage(lines: readonly string[], moreLines: number, font: BlockFont, theme: ThemeKind, tabSize = 4): BlockImage {
  const p = PALETTES[theme];
  const shown = lines.map((l) => expandTabs(l, tabSize));
  const rows = shown.length + (moreLines > 0 ? 1 : 0);
  const charWidth = font.size * 0.6;
  const padX = Math.round(font.size * 0.5);
  const columns = Math.max(8, ...shown.map((l) => l.length));
  const width = Math.ceil(columns * charWidth + 2 * padX);
  const height = rows * font.lineHeight + 2;
  const baseline = (row: number) => 1 + row * font.lineHeight + Math.round((font.lineHeight + font.size * 0.7) / 2);
  const family = escapeXml(font.family);
  const text = shown
    .map((l, i) => `<text x="${padX}" y="${baseline(i)}" xml:space="preserve" fill="${p.foreground}">${escapeXml(l) || ' '}</text>`)
    .concat(moreLines > 0 ? [`<text x="${padX}" y="${baseline(shown.length)}" fill="${p.muted}" font-style="italic">… ${moreLines} more line${moreLines === 1 ? '' : 's'}</text>`] : [])
    .join('');
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">` +
    `<g font-family="${family}" font-size="${font.size}px">` +
    `<rect x="0.5" y="0.5" width="${width - 1}" height="${height - 1}" rx="3" fill="${p.background}"/>` +
    `<rect x="0.5" y="0.5" width="${width - 1}" height="${height - 1}" rx="3" fill="${p.tint}" stroke="${p.border}"/>` +
    `${text}</g></svg>`;
  return { uri: `data:image/svg+xml;base64,${Buffer.from(svg, 'utf8').toString('base64')}`, width, height };
}

/** A small gutter arrow (the line a far next edit is on), in the theme's accent. */
export function gutterArrow(theme: ThemeKind): string {
  const color = theme === 'light' || theme === 'highContrastLight' ? '#005fb8' : '#4daafc';
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16"><path d="M3 4h5l4 4-4 4H3l4-4z" fill="${color}"/></svg>`;
  return `data:image/svg+xml;base64,${Buffer.from(svg, 'utf8').toString('base64')}`;
}
