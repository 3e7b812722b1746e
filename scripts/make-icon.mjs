// Draws media/icon.png (128x128): a dark tile with a bright "ghost text" bar and a cursor.
import { writeFileSync } from 'node:fs';
import { deflateSync } from 'node:zlib';

const W = 128,
  H = 128;
const px = Buffer.alloc(W * H * 4);
const set = (x, y, [r, g, b, a = 255]) => {
  const i = (y * W + x) * 4;
  px[i] = r;
  px[i + 1] = g;
  px[i + 2] = b;
  px[i + 3] = a;
};
for (let y = 0; y < H; y++)
  for (let x = 0; x < W; x++) {
    const r = 22,
      inside =
        (x >= r || y >= r || (x - r) ** 2 + (y - r) ** 2 <= r * r) &&
        (x < W - r || y >= r || (x - (W - r)) ** 2 + (y - r) ** 2 <= r * r) &&
        (x >= r || y < H - r || (x - r) ** 2 + (y - (H - r)) ** 2 <= r * r) &&
        (x < W - r || y < H - r || (x - (W - r)) ** 2 + (y - (H - r)) ** 2 <= r * r);
    set(x, y, inside ? [24, 28, 44] : [0, 0, 0, 0]);
  }
const rect = (x0, y0, w, h, c) => {
  for (let y = y0; y < y0 + h; y++) for (let x = x0; x < x0 + w; x++) set(x, y, c);
};
rect(20, 30, 56, 12, [120, 200, 255]); // typed code
rect(20, 58, 30, 12, [120, 200, 255]);
rect(54, 56, 5, 16, [255, 255, 255]); // cursor
rect(64, 58, 44, 12, [120, 200, 255, 110]); // ghost text
rect(20, 86, 70, 12, [120, 200, 255, 110]);
const raw = Buffer.alloc(H * (W * 4 + 1));
for (let y = 0; y < H; y++) {
  raw[y * (W * 4 + 1)] = 0;
  px.copy(raw, y * (W * 4 + 1) + 1, y * W * 4, (y + 1) * W * 4);
}
const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc = (b) => {
  let c = 0xffffffff;
  for (const x of b) c = crcTable[(c ^ x) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};
const chunk = (type, data) => {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type), data]);
  const c = Buffer.alloc(4);
  c.writeUInt32BE(crc(td));
  return Buffer.concat([len, td, c]);
};
const ihdr = Buffer.alloc(13);
ihdr.writeUInt32BE(W, 0);
ihdr.writeUInt32BE(H, 4);
ihdr[8] = 8;
ihdr[9] = 6;
writeFileSync(
  new URL('../media/icon.png', import.meta.url),
  Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]),
);
