// The h5lake web view: folders, a domain's tree, an object's details and its values.
// State lives in the URL (?folder=F, or ?domain=D&path=P), so every view can be shared.
// Hooks for later: versions would add ?domain=D@REF and a timeline panel; maps a kind "map"
// with a paged key/value table. Nothing here assumes they do not exist beyond the kinds below.

import { ApiError, apiUrl, getJson, getPreview } from './api.js';
import { bytes, el, isNumericType, maxShapeText, num, shapeText, typeText, valueText, when } from './format.js';
import { drawHeatmap } from './heatmap.js';
import { drawLine } from './line.js';

const $ = (id) => document.getElementById(id);
const ICONS = { group: 'G', dataset: 'D', datatype: 'T', soft_link: 'S', external_link: 'E', other: '?', folder: 'F', domain: 'D' };
const icon = (kind) => el('span', { class: `icon ${kind}`, 'aria-hidden': 'true' }, ICONS[kind] ?? '?');
const TABLE_ROWS = 100;
const TABLE_COLS = 50;
let openDomainPath = null;
let domainPaths = [];

// --- navigation --------------------------------------------------------------------------

function state() {
  const q = new URLSearchParams(location.search);
  return { domain: q.get('domain'), path: q.get('path') || '/', folder: q.get('folder') };
}

function link(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  return `/view/?${q}`;
}

function go(params) {
  history.pushState(null, '', link(params));
  route();
}

function anchor(params, text, attrs = {}) {
  return el('a', {
    href: link(params),
    ...attrs,
    onclick: (e) => { if (!e.ctrlKey && !e.metaKey) { e.preventDefault(); go(params); } },
  }, text);
}

window.addEventListener('popstate', () => route());

async function route() {
  const { domain, path, folder } = state();
  $('message').hidden = true;
  try {
    if (domain) await openDomain(domain, path);
    else await openFolder(folder || '/home');
  } catch (error) {
    showError(error);
  }
}

function showError(error) {
  const box = $('message');
  const refused = error instanceof ApiError && (error.status === 401 || error.status === 403);
  box.className = refused ? 'refusal' : 'error';
  box.textContent = refused ? `Refused: ${error.message}` : `Error: ${error.message}`;
  box.hidden = false;
  if (refused) {
    $('panel').replaceChildren();
    $('tree').replaceChildren();
    openDomainPath = null;
  }
}

function crumbs(path, domain) {
  const parts = path.split('/').filter(Boolean);
  const nodes = [anchor({ folder: '/' }, '/')];
  parts.forEach((part, i) => {
    const sub = '/' + parts.slice(0, i + 1).join('/');
    const last = i === parts.length - 1;
    nodes.push(last && domain ? anchor({ domain: sub }, part, { class: 'domain' }) : anchor({ folder: sub }, part));
    if (!last) nodes.push(el('span', { class: 'sep' }, '/'));
  });
  $('crumbs').replaceChildren(...nodes);
}

// --- folders -----------------------------------------------------------------------------

async function openFolder(folder) {
  openDomainPath = null;
  crumbs(folder, false);
  $('search').hidden = true;
  $('search-results').hidden = true;
  $('tree').replaceChildren();
  const { entries } = await getJson('folder', { folder });
  const rows = entries.map((e) => el('tr', {},
    el('td', {}, icon(e.kind), ' ',
      anchor(e.kind === 'folder' ? { folder: e.name } : { domain: e.name }, e.name.split('/').pop())),
    el('td', {}, e.kind), el('td', {}, e.owner ?? '—'),
    el('td', { class: 'num' }, e.kind === 'domain' ? bytes(e.size) : ''), el('td', {}, when(e.lastModified))));
  const parent = folder.replace(/\/[^/]+\/?$/, '') || '/';
  $('panel').replaceChildren(
    el('h2', {}, `Folder ${folder}`),
    folder !== '/' ? anchor({ folder: parent }, '↑ parent folder', { class: 'up' }) : null,
    entries.length
      ? el('table', { id: 'folder', class: 'grid' },
        el('thead', {}, el('tr', {}, ...['name', 'kind', 'owner', 'size', 'last change'].map((h) => el('th', {}, h)))),
        el('tbody', {}, rows))
      : el('p', { class: 'muted' }, 'Nothing here that you may read.'),
  );
}

// --- a domain: tree and search --------------------------------------------------------------

async function openDomain(domain, path) {
  crumbs(domain, true);
  if (openDomainPath !== domain) {
    const found = await getJson('paths', { domain });
    domainPaths = found.paths;
    openDomainPath = domain;
    renderTree(domain);
    $('search').hidden = false;
    $('search').value = '';
    $('search-results').hidden = true;
  }
  for (const node of document.querySelectorAll('#tree .node')) {
    node.classList.toggle('selected', node.dataset.path === path);
  }
  const entity = await getJson('object', { domain, path });
  renderEntity(domain, entity);
}

function renderTree(domain) {
  const nodes = new Map();
  for (const { path, kind } of domainPaths) nodes.set(path, { path, kind, children: [] });
  for (const node of nodes.values()) {
    if (node.path === '/') continue;
    const parent = nodes.get(node.path.replace(/\/[^/]*$/, '') || '/');
    parent?.children.push(node);
  }
  const item = (node) => {
    const name = node.path === '/' ? domain.split('/').pop() : node.path.split('/').pop();
    const label = anchor({ domain, path: node.path }, [icon(node.kind), ` ${name}`],
      { class: `node ${node.kind}`, 'data-path': node.path, 'data-kind': node.kind, role: 'treeitem' });
    if (!node.children.length) return el('li', {}, label);
    const list = el('ul', { role: 'group' }, node.children.map(item));
    const caret = el('button', {
      class: 'caret', 'aria-label': 'collapse',
      onclick: () => { list.hidden = !list.hidden; caret.textContent = list.hidden ? '▸' : '▾'; },
    }, '▾');
    return el('li', {}, caret, label, list);
  };
  $('tree').replaceChildren(item(nodes.get('/')));
}

$('search').addEventListener('input', () => {
  const query = $('search').value.trim().toLowerCase();
  const box = $('search-results');
  if (!query) { box.hidden = true; return; }
  const matches = domainPaths.filter((p) => p.path.toLowerCase().includes(query));
  box.replaceChildren(
    el('div', { class: 'muted' }, `${matches.length} match${matches.length === 1 ? '' : 'es'}`),
    ...matches.slice(0, 200).map((p) => el('div', {},
      anchor({ domain: openDomainPath, path: p.path }, [icon(p.kind), ` ${p.path}`], { class: 'hit' }))),
  );
  box.hidden = false;
});

// --- one object ------------------------------------------------------------------------------

function section(title, ...body) {
  return el('section', { class: 'card' }, el('h3', {}, title), ...body);
}

function infoTable(id, rows) {
  return el('table', { id, class: 'info' },
    el('tbody', {}, rows.filter(Boolean).map(([k, v]) => el('tr', {}, el('th', {}, k), el('td', {}, v)))));
}

function renderEntity(domain, entity) {
  const parts = [el('h2', {}, el('span', { class: `badge ${entity.kind}` }, entity.kind.replace('_', ' ')), ' ', entity.path)];
  if (entity.link) {
    parts.push(section('Link', infoTable('link-info', Object.entries(entity.link).map(([k, v]) => [k, String(v)]))));
  }
  if (entity.dataset) parts.push(...datasetParts(domain, entity));
  if (entity.datatype) parts.push(section('Type', el('p', { class: 'type' }, typeText(entity.datatype.type))));
  if (entity.kind === 'group') {
    parts.push(section(`Members (${entity.children.length})`, entity.children.length
      ? el('ul', { class: 'members' }, entity.children.map((c) => el('li', {},
        anchor({ domain, path: c.path }, [icon(c.kind), ` ${c.name}`]), el('span', { class: 'muted' }, ` ${c.kind}`))))
      : el('p', { class: 'muted' }, 'empty group')));
  }
  if (entity.attributes) parts.push(attributesCard(entity.attributes));
  $('panel').replaceChildren(...parts);
  if (entity.dataset) showValues(domain, entity);
}

function attributesCard(attributes) {
  if (!attributes.length) return section('Attributes', el('p', { class: 'muted' }, 'none'));
  return section(`Attributes (${attributes.length})`, el('table', { id: 'attributes', class: 'grid' },
    el('thead', {}, el('tr', {}, ['name', 'type', 'shape', 'value'].map((h) => el('th', {}, h)))),
    el('tbody', {}, attributes.map((a) => el('tr', {},
      el('td', {}, a.name), el('td', {}, typeText(a.type)), el('td', {}, shapeText(a.shape)),
      el('td', { class: 'value' }, valueText(a.value)))))));
}

function filtersText(filters) {
  if (!filters?.length) return 'none';
  return filters.map((f) => `${f.name ?? f.class}${f.level !== undefined ? ` (level ${f.level})` : ''}`).join(', ');
}

function datasetParts(domain, entity) {
  const d = entity.dataset;
  const s = d.stats;
  const rows = [
    ['type', typeText(d.type)],
    ['shape', shapeText(d.shape)],
    ['maximum shape', maxShapeText(d.shape)],
    ['chunk shape', d.chunks?.length ? d.chunks.join(' × ') : '—'],
    ['layout', d.layout ?? '—'],
    ['filters', filtersText(d.filters)],
    ['fill value', d.fillValue === undefined || d.fillValue === null ? 'default' : valueText(d.fillValue)],
    s && ['allocated chunks', `${s.allocatedChunkCount} of ${s.logicalChunkCount}`],
    s && ['allocated bytes', `${bytes(s.allocatedSize)} (logical ${bytes(s.logicalSize)})`],
    d.linked && ['linked file', `${d.linked.file_uri ?? '?'} (${d.linked.class})`],
  ];
  return [section('Dataset', infoTable('dataset-info', rows)), el('section', { class: 'card', id: 'vis' })];
}

// --- values ------------------------------------------------------------------------------------

function downloads(domain, path, selection) {
  const url = (format) => apiUrl('values', { domain, path, selection, format });
  return el('div', { class: 'downloads' }, 'Download visible selection: ',
    el('a', { href: url('npy'), id: 'download-npy', download: '' }, '.npy'), ' ',
    el('a', { href: url('csv'), id: 'download-csv', download: '' }, '.csv'));
}

function showValues(domain, entity) {
  const vis = $('vis');
  const { shape, type } = entity.dataset;
  if (shape.class === 'H5S_NULL') { vis.replaceChildren(el('p', { class: 'muted' }, 'No values (null dataspace).')); return; }
  if (shape.class === 'H5S_SCALAR') { showScalar(vis, domain, entity.path); return; }
  const dims = shape.dims;
  if (dims.some((n) => n === 0)) { vis.replaceChildren(el('p', { class: 'muted' }, 'No values (empty).')); return; }
  const numeric = isNumericType(type);
  const views = numeric ? (dims.length === 1 ? ['line', 'table'] : ['image', 'table']) : ['table'];
  const body = el('div', { class: 'vis-body' });
  const tabs = el('div', { class: 'tabs' }, views.map((v) => el('button', {
    class: 'tab', 'data-view': v,
    onclick: () => choose(v),
  }, { line: 'Line plot', image: 'Image', table: 'Table' }[v])));
  vis.replaceChildren(el('h3', {}, 'Values'), tabs, body);
  const choose = (view) => {
    for (const t of tabs.children) t.classList.toggle('active', t.dataset.view === view);
    const ctx = { domain, path: entity.path, dims, type, host: body };
    const run = { line: showLine, image: showImage, table: showTable }[view];
    run(ctx).catch(showError);
  };
  choose(views[0]);
}

async function showScalar(vis, domain, path) {
  const found = await getJson('values', { domain, path });
  vis.replaceChildren(el('h3', {}, 'Value'), el('div', { id: 'scalar-value', class: 'scalar' }, valueText(found.value)));
}

function status(text) {
  return el('div', { class: 'status muted' }, text);
}

function modeText(h) {
  const what = { full: 'every value', mean: 'block means', minmax: 'min/max per pixel', stride: 'sampled' }[h.mode];
  const step = h.step.some((s) => s > 1) ? `, step ${h.step.join(' × ')}` : '';
  return `${what}${step} — ${bytes(h.bytes)} transferred`;
}

async function showLine({ domain, path, dims, host }) {
  const n = dims[0];
  let range = [0, n];
  const plotHost = el('div', { class: 'plot' });
  const info = status('');
  const controls = el('div', { class: 'controls' });
  host.replaceChildren(controls, plotHost, info, el('div', { id: 'dl' }));
  const load = async () => {
    const selection = `${range[0]}:${range[1]}`;
    const preview = await getPreview({ domain, path, selection, width: plotHost.clientWidth || 800 });
    drawLine(plotHost, preview, { onRange: (lo, hi) => { range = [Math.max(0, lo), Math.min(n, hi)]; load().catch(showError); } });
    info.textContent = `indexes ${range[0]}–${range[1] - 1}: ${modeText(preview.header)}`;
    host.querySelector('#dl').replaceChildren(downloads(domain, path, selection));
  };
  const pan = (f) => {
    const w = range[1] - range[0];
    const lo = Math.max(0, Math.min(n - w, range[0] + Math.round(f * w)));
    range = [lo, lo + w];
    load().catch(showError);
  };
  controls.replaceChildren(
    el('button', { onclick: () => pan(-0.5), title: 'pan left' }, '◀'),
    el('button', { onclick: () => pan(0.5), title: 'pan right' }, '▶'),
    el('button', { onclick: () => { range = [0, n]; load().catch(showError); } }, 'Reset zoom'),
    el('span', { class: 'muted' }, ' drag across the plot to zoom in'),
  );
  await load();
}

async function showImage({ domain, path, dims, host }) {
  const rank = dims.length;
  const fixed = dims.slice(0, rank - 2).map(() => 0);
  let region = { rows: [0, dims[rank - 2]], cols: [0, dims[rank - 1]] };
  const plotHost = el('div', { class: 'plot' });
  const info = status('');
  const hover = status('');
  hover.id = 'hover';
  const sliders = el('div', { class: 'sliders' }, fixed.map((_, d) => {
    const out = el('output', { id: `dim-${d}-value` }, '0');
    const input = el('input', {
      type: 'range', min: 0, max: dims[d] - 1, value: 0, class: 'dim-slider', 'data-dim': d,
      'aria-label': `index in dimension ${d}`,
      oninput: () => { out.textContent = input.value; },
      onchange: () => { fixed[d] = Number(input.value); load().catch(showError); },
    });
    return el('label', {}, `dim ${d} (of ${dims[d]}): `, input, ' ', out);
  }));
  host.replaceChildren(sliders, el('div', { class: 'controls' },
    el('button', { onclick: () => { region = { rows: [0, dims[rank - 2]], cols: [0, dims[rank - 1]] }; load().catch(showError); } }, 'Reset zoom'),
    el('span', { class: 'muted' }, ' drag a rectangle on the image to zoom in')), plotHost, info, hover, el('div', { id: 'dl' }));
  const load = async () => {
    const selection = [...fixed, `${region.rows[0]}:${region.rows[1]}`, `${region.cols[0]}:${region.cols[1]}`].join(',');
    const width = Math.max(200, plotHost.clientWidth - 90);
    const preview = await getPreview({ domain, path, selection, width, height: Math.round(width * 0.75) });
    drawHeatmap(plotHost, preview, {
      onZoom: (r) => { region = r; load().catch(showError); },
      onHover: (r, c, v) => { hover.textContent = `[${[...fixed, r, c].join(', ')}] ≈ ${num(v)}`; },
    });
    plotHost.dataset.selection = selection;
    info.textContent = `rows ${region.rows[0]}–${region.rows[1] - 1}, columns ${region.cols[0]}–${region.cols[1] - 1}: ${modeText(preview.header)}`;
    host.querySelector('#dl').replaceChildren(downloads(domain, path, selection));
  };
  await load();
}

async function showTable({ domain, path, dims, type, host }) {
  let start = 0;
  const rank = dims.length;
  const tableHost = el('div', { class: 'table-wrap' });
  const info = status('');
  const prev = el('button', { onclick: () => { start = Math.max(0, start - TABLE_ROWS); load().catch(showError); } }, '◀ previous');
  const next = el('button', { onclick: () => { start += TABLE_ROWS; load().catch(showError); } }, 'next ▶');
  host.replaceChildren(el('div', { class: 'controls' }, prev, next), info, tableHost, el('div', { id: 'dl' }));
  const load = async () => {
    const rowSel = `${start}:${Math.min(dims[0], start + TABLE_ROWS)}`;
    const rest = rank > 1 ? [...dims.slice(1, rank - 1).map(() => 0), `0:${Math.min(dims[rank - 1], TABLE_COLS)}`] : [];
    const selection = [rowSel, ...rest].join(',');
    const found = await getJson('values', { domain, path, selection });
    const fields = type.class === 'H5T_COMPOUND' ? type.fields.map((f) => f.name) : null;
    const rows = found.value;
    const head = fields ?? (rank > 1 ? rows[0].map((_, j) => String(j)) : ['value']);
    const cells = (row) => (fields ? row : rank > 1 ? row : [row]).map((v) => el('td', {}, valueText(v)));
    tableHost.replaceChildren(el('table', { id: 'values', class: 'grid' },
      el('thead', {}, el('tr', {}, el('th', {}, '#'), head.map((h) => el('th', {}, h)))),
      el('tbody', {}, rows.map((row, i) => el('tr', {}, el('th', {}, String(start + i)), cells(rank > 2 ? row : row))))));
    info.textContent = `rows ${start}–${start + rows.length - 1} of ${dims[0]}` + (rank > 2 ? ` (other dimensions at index 0)` : '');
    prev.disabled = start === 0;
    next.disabled = start + TABLE_ROWS >= dims[0];
    host.querySelector('#dl').replaceChildren(downloads(domain, path, selection));
  };
  await load();
}

route();
