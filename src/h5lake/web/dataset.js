// The rows of a dataset's card (its type, shape, layout, storage and, when linked, its files)
// and the names of its dimensions.

import { bytes, el, maxShapeText, shapeText, typeText, valueText } from './format.js';

function filtersText(filters) {
  if (!filters?.length) return 'none';
  return filters.map((f) => `${f.name ?? f.class}${f.level !== undefined ? ` (level ${f.level})` : ''}`).join(', ');
}

const LAYOUTS = {
  H5D_CHUNKED: 'chunked',
  H5D_CONTIGUOUS: 'contiguous',
  H5D_COMPACT: 'compact',
  H5D_CONTIGUOUS_REF: 'contiguous, in an HDF5 file',
  H5D_CHUNKED_REF: 'chunked, in an HDF5 file',
  H5D_CHUNKED_REF_INDIRECT: 'chunked, each chunk in the file its table names',
};

// The files a linked dataset reads: each with the chunks it holds, when counted.
function linkedFiles(linked) {
  const files = linked.files ?? [];
  if (!files.length) return el('span', { class: 'muted' }, 'none');
  const shown = files.slice(0, 20).map((f) => el('div', {}, f.uri,
    f.chunks === null || f.chunks === undefined ? '' : el('span', { class: 'muted' }, ` (${f.chunks} chunk${f.chunks === 1 ? '' : 's'})`)));
  if (files.length > 20) shown.push(el('div', { class: 'muted' }, `… and ${files.length - 20} more`));
  return el('div', { class: 'files' }, shown);
}

export function datasetRows(d) {
  const s = d.stats;
  const chunked = /CHUNKED/.test(d.layout ?? '');
  const linked = d.linked;
  // h5lake keeps every dataset in pieces of its own; for one created contiguous (or compact)
  // those are not HDF5 chunks, so the page says where the values are instead
  const kept = s && !linked && { compact: "in the dataset's document", chunks: `${s.allocatedChunkCount} stored piece${s.allocatedChunkCount === 1 ? '' : 's'}` }[s.storage];
  // a chunk table's chunks are counted apart (countLinked): until then, or when it is too long
  // to read here, the page does not claim a count
  const indirect = linked?.class === 'H5D_CHUNKED_REF_INDIRECT';
  const counted = !indirect || linked.allocatedChunks !== undefined;
  const pending = indirect && !counted && linked.countable;
  const waiting = pending ? 'counting in the chunk table…' : 'not counted (the chunk table is too long to read here)';
  const files = linked?.files?.length ?? 0;
  return [
    ['type', typeText(d.type)],
    ['shape', shapeText(d.shape)],
    ['maximum shape', maxShapeText(d.shape)],
    ['layout', d.layout ? `${LAYOUTS[d.layout] ?? d.layout} (${d.layout})` : '—'],
    chunked && ['chunk shape', d.chunks?.length ? d.chunks.join(' × ') : '—'],
    ['filters', filtersText(d.filters)],
    ['fill value', d.fillValue === undefined || d.fillValue === null ? 'default' : valueText(d.fillValue, d.type)],
    s && chunked && ['allocated chunks', counted ? `${s.allocatedChunkCount} of ${s.logicalChunkCount}` : waiting],
    s && !chunked && kept && ['stored', kept],
    s && ['allocated bytes', counted ? `${bytes(s.allocatedSize)} (logical ${bytes(s.logicalSize)})` : `${waiting} (logical ${bytes(s.logicalSize)})`],
    linked && [files === 1 ? 'linked file' : `linked files (${files})`, linkedFiles(linked)],
  ];
}

// A dimension as the page names it: its name (DIMENSION_LABELS, else its scale's NAME), and
// its number.
export function dimName(dimensions, d) {
  const label = dimensions?.[d]?.label;
  return label ? `${label} (dim ${d})` : `dim ${d}`;
}

// A slider per dimension that is not shown, set at ``fixed``; onChange after a move.
export function sliders(dims, fixed, onChange, dimensions) {
  return el('div', { class: 'sliders' }, fixed.map((_, d) => {
    const out = el('output', { id: `dim-${d}-value` }, String(fixed[d]));
    const input = el('input', {
      type: 'range', min: 0, max: dims[d] - 1, value: fixed[d], class: 'dim-slider', 'data-dim': d,
      'aria-label': `index in ${dimName(dimensions, d)}`,
      oninput: () => { out.textContent = input.value; },
      onchange: () => { fixed[d] = Number(input.value); onChange(); },
    });
    return el('label', { class: 'dim-label', 'data-dim': d }, `${dimName(dimensions, d)}, of ${dims[d]}: `, input, ' ', out);
  }));
}
