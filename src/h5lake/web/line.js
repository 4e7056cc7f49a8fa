// A line plot of a 1-D region with uPlot. Dragging selects an x range, which is read again
// (at full resolution once it is small enough); the buttons pan and reset.

import uPlot from './vendor/uplot.esm.js';

export function drawLine(host, preview, { onRange }) {
  const { header, x, y } = preview;
  const width = host.clientWidth || 700;
  const opts = {
    width,
    height: 360,
    scales: { x: { time: false } },
    axes: [{ label: 'index' }, { label: 'value' }],
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
  // it is left out of the line (a gap)
  const values = Array.from(y, (v) => (Number.isFinite(v) ? v : null));
  const plot = new uPlot(opts, [Array.from(x), values], host);
  plot.root.id = 'lineplot';
  plot.root.dataset.points = String(x.length);
  plot.root.dataset.mode = header.mode;
  return plot;
}
