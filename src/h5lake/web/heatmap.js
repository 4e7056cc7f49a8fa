// An image of a 2-D region on a canvas, coloured by a viridis-like map, with a colour scale.
// Dragging a rectangle asks for that region (onZoom), so a zoomed view is read at full resolution.

import { el, niceTicks, num } from './format.js';

// Viridis at nine evenly spaced stops (sRGB); the 256-entry table interpolates between them.
const STOPS = [
  [68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141],
  [39, 173, 129], [92, 200, 99], [170, 220, 50], [253, 231, 37],
];

export const COLORMAP = (() => {
  const table = new Uint8Array(256 * 3);
  for (let i = 0; i < 256; i += 1) {
    const pos = (i / 255) * (STOPS.length - 1);
    const k = Math.min(Math.floor(pos), STOPS.length - 2);
    const f = pos - k;
    for (let c = 0; c < 3; c += 1) table[i * 3 + c] = Math.round(STOPS[k][c] * (1 - f) + STOPS[k + 1][c] * f);
  }
  return table;
})();

// Colour scales, as H5Web has them: each maps a value to the axis the colours are spread on, or
// to NaN where it has no place (log: at or below 0; sqrt: below 0), which is left transparent as
// NaN is. Symlog is sign(v) log10(1 + |v|), H5Web's: every value has a place.
export const SCALES = {
  linear: { label: 'Linear', f: (v) => v },
  log: { label: 'Log', f: (v) => (v > 0 ? Math.log10(v) : NaN), fits: (v) => v > 0, none: 'no value above 0' },
  symlog: { label: 'Symlog', f: (v) => Math.sign(v) * Math.log10(1 + Math.abs(v)) },
  sqrt: { label: 'Square root', f: (v) => (v >= 0 ? Math.sqrt(v) : NaN), fits: (v) => v >= 0, none: 'no value at or above 0' },
};

// The range of the colours, in values: the finite values' extremes, the smallest of those the
// scale can place as its low end (as H5Web: log starts at the smallest value above 0). Null
// when the scale can place none of them.
export function scaleRange(data, header, scale) {
  const fits = SCALES[scale].fits;
  if (!fits) return header.min === null || header.min === undefined ? null : [header.min, header.max];
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < data.length; i += 1) {
    const v = data[i];
    if (Number.isFinite(v) && fits(v)) { if (v < lo) lo = v; if (v > hi) hi = v; }
  }
  return lo <= hi ? [lo, hi] : null;
}

function paint(data, rows, cols, range, scale) {
  const image = new ImageData(cols, rows);
  if (!range) return image; // nothing the scale can place: all transparent
  const f = SCALES[scale].f;
  const low = f(range[0]);
  const span = f(range[1]) > low ? f(range[1]) - low : 1;
  for (let i = 0; i < rows * cols; i += 1) {
    const v = data[i];
    const o = i * 4;
    if (!Number.isFinite(v)) { image.data[o + 3] = 0; continue; } // NaN and infinities: transparent
    const t = f(v);
    if (Number.isNaN(t)) { image.data[o + 3] = 0; continue; } // no place on this scale
    const k = Math.max(0, Math.min(255, Math.round(((t - low) / span) * 255))) * 3;
    image.data[o] = COLORMAP[k];
    image.data[o + 1] = COLORMAP[k + 1];
    image.data[o + 2] = COLORMAP[k + 2];
    image.data[o + 3] = 255;
  }
  return image;
}

function colorbar(range, scale) {
  const bar = el('canvas', { class: 'colorbar', width: 16, height: 256 });
  const ctx = bar.getContext('2d');
  for (let i = 0; i < 256; i += 1) {
    const k = (255 - i) * 3;
    ctx.fillStyle = `rgb(${COLORMAP[k]},${COLORMAP[k + 1]},${COLORMAP[k + 2]})`;
    ctx.fillRect(0, i, 16, 1);
  }
  return el('div', { class: 'scale', title: `${SCALES[scale].label} colour scale` },
    el('span', { id: 'cbar-max', class: 'cbar-label', text: num(range?.[1]) }),
    bar,
    el('span', { id: 'cbar-min', class: 'cbar-label', text: num(range?.[0]) }),
    scale === 'linear' ? null : el('span', { class: 'cbar-kind muted', text: SCALES[scale].label.toLowerCase() }));
}

// An axis along ``count`` cells from dataset index ``start``, as H5Web draws one: a cell spans
// [i, i + 1], so a tick at index i marks the cell's first edge. With ``scale`` ({idx, val}: a
// dimension scale's values at ascending indexes from ``start``, strictly monotonic), a cell's
// first edge is its scale value, read between the samples linearly and, past the last, along
// the last step (as H5Web adds the edge after the last value); ticks are round scale values.
export function axisModel(start, count, length, scale) {
  const target = Math.max(2, Math.round(length / 70));
  if (count <= 0) return { valueAt: (e) => e, ticks: [] }; // no cells: no axis
  if (!scale) {
    return {
      valueAt: (e) => e,
      ticks: niceTicks(start, start + count, target, true).map((t) => ({ value: t, pos: (t - start) / count, text: String(t) })),
    };
  }
  const { idx, val } = scale;
  const segment = (e) => {
    let k = 0;
    while (k < idx.length - 2 && e > idx[k + 1]) k += 1;
    return k;
  };
  const valueAt = (e) => {
    if (idx.length === 1) return val[0] + (e - idx[0]);
    const k = segment(e);
    return val[k] + ((e - idx[k]) * (val[k + 1] - val[k])) / (idx[k + 1] - idx[k]);
  };
  const edges = [...idx.filter((i) => i <= start + count), start + count];
  const at = edges.map(valueAt);
  const ticks = niceTicks(Math.min(at[0], at[at.length - 1]), Math.max(at[0], at[at.length - 1]), target).map((t) => {
    for (let k = 0; k < edges.length - 1; k += 1) {
      const [a, b] = [at[k], at[k + 1]];
      if ((t - a) * (t - b) <= 0 && a !== b) {
        const e = edges[k] + ((t - a) / (b - a)) * (edges[k + 1] - edges[k]);
        return { value: t, pos: (e - start) / count, text: num(t) };
      }
    }
    return null;
  }).filter(Boolean);
  return { valueAt, ticks };
}

function axisElement(id, direction, ticks, length) {
  const prop = direction === 'x' ? 'left' : 'top';
  return el('div', { id, class: `axis ${direction}`, style: `${direction === 'x' ? 'width' : 'height'}: ${length}px` },
    ticks.map((t) => el('span', { class: 'tick', 'data-value': t.value, style: `${prop}: ${(t.pos * length).toFixed(1)}px` }, t.text)));
}

export const MAX_HEIGHT = 560;

// The image's size in pixels for ``available`` pixels of width and data of ``ratio`` rows per
// column: with ``keepRatio`` (H5Web's default aspect) a cell is square, the image as wide as
// fits and at most MAX_HEIGHT tall; without, it fills the width and its height follows the
// data between 200 and MAX_HEIGHT pixels.
export function imageSize(available, ratio, keepRatio) {
  if (!keepRatio) return [available, Math.max(200, Math.min(MAX_HEIGHT, Math.round(available * ratio)))];
  const height = Math.min(MAX_HEIGHT, available * ratio);
  return [Math.max(1, Math.round(height / ratio)), Math.max(1, Math.round(height))];
}

// preview: {header, data}; region: {rows: [start, stop], cols: [start, stop]} in dataset indexes.
// scale: a key of SCALES. axes: {rows, cols}, each {label, scale} (scale: see axisModel, or null
// for indexes); keepRatio: see imageSize. Returns a note to show when the scale can place no value.
export function drawHeatmap(host, preview, { onZoom, onHover, scale = 'linear', axes = {}, keepRatio = true }) {
  const { header, data } = preview;
  const [rows, cols] = header.dims;
  const range = scaleRange(data, header, scale);
  const [width, height] = imageSize(host.clientWidth - 170 || 600, header.shape[0] / header.shape[1], keepRatio);
  const canvas = el('canvas', { id: 'heatmap', width, height, 'aria-label': 'image of the selected values' });
  const ctx = canvas.getContext('2d');
  const source = el('canvas', { width: cols, height: rows });
  if (rows > 0 && cols > 0) source.getContext('2d').putImageData(paint(data, rows, cols, range, scale), 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(source, 0, 0, width, height);

  // canvas pixel -> dataset index, through the reduced grid
  const toIndex = (px, py) => [
    header.start[0] + Math.floor((py / height) * header.shape[0]),
    header.start[1] + Math.floor((px / width) * header.shape[1]),
  ];
  const box = el('div', { class: 'zoombox', hidden: true });
  let anchor = null;
  canvas.addEventListener('mousedown', (e) => { anchor = [e.offsetX, e.offsetY]; });
  canvas.addEventListener('mousemove', (e) => {
    const [r, c] = toIndex(e.offsetX, e.offsetY);
    const i = Math.floor((e.offsetY / height) * rows) * cols + Math.floor((e.offsetX / width) * cols);
    onHover?.(r, c, data[i], rowAxis.valueAt(r), colAxis.valueAt(c));
    if (!anchor) return;
    Object.assign(box.style, {
      left: `${Math.min(anchor[0], e.offsetX)}px`, top: `${Math.min(anchor[1], e.offsetY)}px`,
      width: `${Math.abs(e.offsetX - anchor[0])}px`, height: `${Math.abs(e.offsetY - anchor[1])}px`,
    });
    box.hidden = false;
  });
  canvas.addEventListener('mouseup', (e) => {
    box.hidden = true;
    if (!anchor) return;
    const [x0, y0] = anchor;
    anchor = null;
    if (Math.abs(e.offsetX - x0) < 4 || Math.abs(e.offsetY - y0) < 4) return;
    const [r0, c0] = toIndex(Math.min(x0, e.offsetX), Math.min(y0, e.offsetY));
    const [r1, c1] = toIndex(Math.max(x0, e.offsetX), Math.max(y0, e.offsetY));
    onZoom?.({ rows: [r0, r1 + 1], cols: [c0, c1 + 1] });
  });
  const stage = el('div', { class: 'stage' }, canvas, box);
  const rowAxis = axisModel(header.start[0], header.shape[0], height, axes.rows?.scale);
  const colAxis = axisModel(header.start[1], header.shape[1], width, axes.cols?.scale);
  const frame = el('div', { class: 'axes' },
    el('div', { id: 'heatmap-y-title', class: 'axis-title y' }, axes.rows?.label ?? 'row index'),
    axisElement('heatmap-y-axis', 'y', rowAxis.ticks, height), stage,
    el('div', {}), el('div', {}), axisElement('heatmap-x-axis', 'x', colAxis.ticks, width),
    el('div', {}), el('div', {}), el('div', { id: 'heatmap-x-title', class: 'axis-title x' }, axes.cols?.label ?? 'column index'));
  host.replaceChildren(el('div', { class: 'heatmap' }, frame, colorbar(range, scale)));
  return range || header.min === null ? null : `${SCALES[scale].none}: nothing to show on a ${scale} scale`;
}
