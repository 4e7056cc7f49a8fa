// A line plot of a 1-D region with uPlot. Dragging selects an x range, which is read again
// (at full resolution once it is small enough); the buttons pan and reset. The value axis is
// linear, log or symlog, as H5Web's line plot offers.

import uPlot from './vendor/uplot.esm.js';
import { niceTicks } from './format.js';

const symlog = (v) => Math.sign(v) * Math.log10(1 + Math.abs(v));
const unsymlog = (t) => Math.sign(t) * (10 ** Math.abs(t) - 1);

// Round values to label a symlog axis: 0 and the powers of ten of either sign in range (every
// other one, or fewer, when there are many), or evenly spaced values when that gives too few.
function symlogTicks(lo, hi, count) {
  const decades = [];
  for (let k = -6; k <= 308; k += 1) {
    const p = 10 ** k;
    if (p > Math.max(Math.abs(lo), Math.abs(hi))) break;
    if (p >= lo && p <= hi) decades.push(p);
    if (-p >= lo && -p <= hi) decades.push(-p);
  }
  const big = decades.filter((v) => Math.abs(v) >= 1 || decades.length < 4);
  if (lo <= 0 && hi >= 0) big.push(0);
  if (big.length < 3) return niceTicks(lo, hi, count);
  big.sort((a, b) => a - b);
  const every = Math.ceil(big.length / count);
  return big.filter((v) => v === 0 || Math.round(Math.log10(Math.abs(v))) % every === 0);
}

function logTicks(lo, hi) {
  const out = [];
  for (let k = Math.floor(Math.log10(lo)); 10 ** k <= hi * (1 + 1e-9); k += 1) if (10 ** k >= lo * (1 - 1e-9)) out.push(10 ** k);
  const every = Math.ceil(out.length / 10);
  return out.filter((v) => Math.round(Math.log10(v)) % every === 0);
}

// The value scale's uPlot options; values it cannot place become gaps (null), as H5Web leaves
// out the segments whose ends a log scale cannot place.
export const VALUE_SCALES = {
  linear: { label: 'Linear', fits: () => true, scale: {}, splits: null },
  log: {
    label: 'Log',
    fits: (v) => v > 0,
    scale: { distr: 3, log: 10, range: (u, lo, hi) => (lo === null ? [1, 10] : uPlot.rangeLog(lo, hi, 10, true)) },
    splits: (u, i, lo, hi) => logTicks(lo, hi),
  },
  symlog: {
    label: 'Symlog',
    fits: () => true,
    scale: {
      distr: 100, fwd: symlog, bwd: unsymlog,
      range: (u, lo, hi) => {
        if (lo === null) return [-1, 1];
        const pad = (symlog(hi) - symlog(lo)) * 0.05 || 0.5;
        return [unsymlog(symlog(lo) - pad), unsymlog(symlog(hi) + pad)];
      },
    },
    splits: (u, i, lo, hi) => symlogTicks(lo, hi, Math.max(2, Math.round(u.bbox.height / devicePixelRatio / 40))),
  },
};

// Draws the line; returns a note to show when the scale leaves values out (else null).
export function drawLine(host, preview, { onRange, scale = 'linear' }) {
  const { header, x, y } = preview;
  const width = host.clientWidth || 700;
  const kind = VALUE_SCALES[scale];
  const yAxis = { label: 'value' };
  if (kind.splits) {
    yAxis.splits = (u, ...args) => {
      const ticks = kind.splits(u, ...args);
      u.root.dataset.yTicks = ticks.join(',');
      return ticks;
    };
  }
  const opts = {
    width,
    height: 360,
    scales: { x: { time: false }, y: kind.scale },
    axes: [{ label: 'index' }, yAxis],
    series: [{ label: 'index' }, { label: 'value', stroke: '#2a6f97', width: 1, spanGaps: false }],
    cursor: { drag: { x: true, y: false, setScale: false } },
    hooks: {
      setScale: [(u, key) => { if (key === 'y') u.root.dataset.yRange = `${u.scales.y.min},${u.scales.y.max}`; }],
      setSelect: [
        (u) => {
          if (u.select.width < 3) return;
          const lo = Math.max(0, Math.floor(u.posToVal(u.select.left, 'x')));
          const hi = Math.ceil(u.posToVal(u.select.left + u.select.width, 'x')) + 1;
          u.setSelect({ left: 0, width: 0, top: 0, height: 0 }, false);
          onRange(lo, hi);
        },
      ],
    },
  };
  host.replaceChildren();
  // an infinity would stretch the value axis to nothing (uPlot draws an empty plot): like NaN,
  // it is left out of the line (a gap); so is a value the scale cannot place
  let left = 0;
  const values = Array.from(y, (v) => {
    if (!Number.isFinite(v)) return null;
    if (kind.fits(v)) return v;
    left += 1;
    return null;
  });
  const plot = new uPlot(opts, [Array.from(x), values], host);
  plot.root.id = 'lineplot';
  plot.root.dataset.points = String(x.length);
  plot.root.dataset.mode = header.mode;
  plot.root.dataset.yScale = scale;
  if (!left) return null;
  const what = header.mode === 'full' ? `${left} of the ${y.length} values are`
    : `${left} of the ${y.length} points drawn (${header.mode === 'minmax' ? 'minimum and maximum per pixel' : 'samples'}) are`;
  if (values.every((v) => v === null)) {
    return `${what} at or below 0: nothing to show on a log scale.`;
  }
  return `${what} at or below 0: a log scale cannot place them, so they are left out (gaps in the line), as H5Web does.`;
}
