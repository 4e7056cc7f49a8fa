// True-colour images (HDF5's image convention), painted as H5Web paints them.

import { getPreview } from './api.js';
import { el, modeText, num, status } from './format.js';

// HDF5's image convention: a true-colour image is rows x columns x channels (INTERLACE_PIXEL,
// the default) or channels x rows x columns (INTERLACE_PLANE). H5Web reads 3 channels (RGB) or 4
// (RGBA) and always takes the last dimension as the channels, ignoring INTERLACE_MODE; the page
// honours it, as the HDF5 image specification defines it. Returns where the channels are
// ('pixel' or 'plane'), or null when the dataset is not such an image.
export function trueColorLayout(dims, attributes) {
  const attr = Object.fromEntries((attributes ?? []).map((a) => [a.name, a.value]));
  if (dims.length !== 3 || attr.CLASS !== 'IMAGE' || attr.IMAGE_SUBCLASS !== 'IMAGE_TRUECOLOR') return null;
  const mode = attr.INTERLACE_MODE ?? 'INTERLACE_PIXEL';
  if (mode === 'INTERLACE_PIXEL' && (dims[2] === 3 || dims[2] === 4)) return 'pixel';
  if (mode === 'INTERLACE_PLANE' && (dims[0] === 3 || dims[0] === 4)) return 'plane';
  return null;
}

// H5Web's convention for the values of a true-colour image, which it does not rescale: floats
// are 0-1, signed 8-bit integers -128-127 (shifted by 128), other integers 0-255. Values outside
// are clipped (H5Web's wider integers wrap around instead), and the page says so.
function rgbConvention(type) {
  if (type.class === 'H5T_FLOAT') return { toByte: (v) => v * 255, low: 0, high: 1 };
  if (/^H5T_STD_I8(LE|BE)$/.test(type.base ?? '')) return { toByte: (v) => v + 128, low: -128, high: 127 };
  return { toByte: (v) => v, low: 0, high: 255 };
}

// The channels (3, or 4 with alpha), each reduced as an image is, painted as colours by
// rgbConvention over a checkerboard, which shows through where alpha is below its top.
export async function showRgb({ domain, path, dims, type, host, interlace }) {
  const plotHost = el('div', { class: 'plot' });
  const info = status('');
  host.replaceChildren(plotHost, info);
  const width = Math.max(200, plotHost.clientWidth - 90);
  const height = Math.round(width * 0.75);
  const planar = interlace === 'plane';
  const [h, w, count] = planar ? [dims[1], dims[2], dims[0]] : dims;
  const channels = await Promise.all([...Array(count).keys()].map((k) => getPreview({
    domain, path, selection: planar ? `${k},0:${h},0:${w}` : `0:${h},0:${w},${k}`, width, height,
  })));
  if (!host.isConnected) return;
  const { header } = channels[0];
  const [rows, cols] = header.dims;
  const { toByte, low, high } = rgbConvention(type);
  const image = new ImageData(cols, rows);
  for (let i = 0; i < rows * cols; i += 1) {
    for (let c = 0; c < count; c += 1) image.data[i * 4 + c] = Math.max(0, Math.min(255, toByte(channels[c].data[i])));
    if (count === 3) image.data[i * 4 + 3] = 255;
  }
  const source = el('canvas', { width: cols, height: rows });
  source.getContext('2d').putImageData(image, 0, 0);
  const shown = Math.min(height, Math.round(width * (header.shape[0] / header.shape[1])));
  const canvas = el('canvas', { id: 'rgb-image', width: Math.round(shown * (header.shape[1] / header.shape[0])), height: shown });
  canvas.dataset.channels = count === 4 ? 'RGBA' : 'RGB';
  const ctx = canvas.getContext('2d');
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(source, 0, 0, canvas.width, canvas.height);
  plotHost.replaceChildren(canvas);
  const sent = channels.reduce((n, ch) => n + ch.header.bytes, 0);
  const layout = planar ? ', channels first (INTERLACE_PLANE)' : '';
  info.textContent = `${h} × ${w} pixels: ${modeText({ ...header, bytes: sent })} `
    + `(${count} channels: ${count === 4 ? 'red, green, blue, alpha' : 'red, green, blue'}${layout})`;
  const lo = Math.min(...channels.map((ch) => ch.header.min ?? low));
  const hi = Math.max(...channels.map((ch) => ch.header.max ?? high));
  if (lo < low || hi > high) {
    const outside = [lo < low ? `down to ${num(lo)}` : null, hi > high ? `up to ${num(hi)}` : null].filter(Boolean).join(' and ');
    plotHost.before(el('p', { id: 'rgb-clipped', class: 'note' },
      `Values ${outside} lie outside ${num(low)}–${num(high)}, the range of a true-colour image of this type `
      + '(as H5Web reads them: integers 0–255, floats 0–1; no rescaling); they are shown clipped.'));
  }
}
