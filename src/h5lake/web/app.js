// The h5lake web view: folders, a domain's tree, an object's details and its values.
// State lives in the URL (?folder=F, or ?domain=D&path=P), so every view can be shared.
// Hooks for later: versions would add ?domain=D@REF and a timeline panel; maps a kind "map"
// with a paged key/value table. Nothing here assumes they do not exist beyond the kinds below.

import { ApiError, apiUrl, getJson, getPreview, getRest } from './api.js';
import { datasetRows, dimName, sliders } from './dataset.js';
import { followShape } from './follow.js';
import { bytes, el, isComplexType, isNumericType, modeText, num, shapeText, status, typeText, valueText, when } from './format.js';
import { SCALES, drawHeatmap } from './heatmap.js';
import { VALUE_SCALES, drawLine } from './line.js';
import { showRgb, trueColorLayout } from './rgb.js';

const $ = (id) => document.getElementById(id);
const ICONS = { group: 'G', dataset: 'D', datatype: 'T', soft_link: 'S', external_link: 'E', other: '?', folder: 'F', domain: 'D' };
const icon = (kind) => el('span', { class: `icon ${kind}`, 'aria-hidden': 'true' }, ICONS[kind] ?? '?');
const TABLE_ROWS = 100;
const TABLE_COLS = 50;
const TREE_OPEN_MAX = 100; // a group of more members starts collapsed (its members drawn on opening)
let openDomainPath = null;
let domainPaths = [];
let treeNodes = new Map(); // path -> {path, kind, children, expand(open)}
let navigation = 0; // bumped by every route(): an answer for an older one is dropped
let following = null; // the AbortController of the follow loop, if one runs
let keepRatio = true; // images keep their data's aspect ratio (or fill the width), for every image

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
  following?.abort();
  const current = navigation + 1;
  navigation = current;
  const stale = () => current !== navigation;
  $('message').hidden = true;
  try {
    if (domain) await openDomain(domain, path, stale);
    else await openFolder(folder || '/home', stale);
  } catch (error) {
    if (stale()) return;
    $('panel').replaceChildren(); // what was shown before is not what the error is about
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

async function openFolder(folder, stale) {
  openDomainPath = null;
  crumbs(folder, false);
  $('search').hidden = true;
  $('search-results').hidden = true;
  $('tree').replaceChildren();
  const { entries } = await getJson('folder', { folder });
  if (stale()) return;
  folderTree(folder, entries);
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

// The sidebar of a folder page: the folders from / down to this one, and what this one holds
// (from the listing the page shows: no other request).
function folderTree(folder, entries) {
  treeNodes = new Map();
  const parts = folder.split('/').filter(Boolean);
  const node = (params, kind, name, path) => anchor(params, [icon(kind), ` ${name}`],
    { class: `node ${kind}${path === folder ? ' selected' : ''}`, 'data-path': path, 'data-kind': kind, role: 'treeitem' });
  let inner = el('ul', { role: 'group' }, entries.map((e) => el('li', {},
    node(e.kind === 'folder' ? { folder: e.name } : { domain: e.name }, e.kind, e.name.split('/').pop(), e.name))));
  for (let i = parts.length; i >= 0; i -= 1) {
    const path = '/' + parts.slice(0, i).join('/');
    const li = el('li', {}, node({ folder: path }, 'folder', i ? parts[i - 1] : '/', path), inner);
    inner = i ? el('ul', { role: 'group' }, li) : li;
  }
  $('tree').replaceChildren(inner);
}

// --- a domain: tree and search --------------------------------------------------------------

async function openDomain(domain, path, stale) {
  crumbs(domain, true);
  if (openDomainPath !== domain) {
    openDomainPath = null; // another domain's tree is no guide to this one, even if it fails
    $('tree').replaceChildren();
    $('search').hidden = true;
    $('search-results').hidden = true;
    const found = await getJson('paths', { domain });
    if (stale()) return;
    domainPaths = found.paths;
    openDomainPath = domain;
    renderTree(domain);
    $('search').hidden = false;
    $('search').value = '';
    $('search-results').hidden = true;
  }
  showInTree(path);
  const entity = await getJson('object', { domain, path });
  if (stale()) return;
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
  treeNodes = nodes;
  const item = (node) => {
    const name = node.path === '/' ? domain.split('/').pop() : node.path.split('/').pop();
    const label = anchor({ domain, path: node.path }, [icon(node.kind), ` ${name}`],
      { class: `node ${node.kind}`, 'data-path': node.path, 'data-kind': node.kind, role: 'treeitem' });
    const li = el('li', {}, label);
    if (!node.children.length) return li;
    let list = null;
    const caret = el('button', { class: 'caret', 'aria-label': `members of ${name}`, 'aria-expanded': 'false' }, '▸');
    node.expand = (open) => {
      if (open && !list) { list = el('ul', { role: 'group' }, node.children.map(item)); li.append(list); }
      if (list) list.hidden = !open;
      caret.textContent = open ? '▾' : '▸';
      caret.setAttribute('aria-expanded', String(open));
    };
    caret.addEventListener('click', () => node.expand(!list || list.hidden));
    li.prepend(caret);
    if (node.path === '/' || node.children.length <= TREE_OPEN_MAX) node.expand(true);
    return li;
  };
  $('tree').replaceChildren(item(nodes.get('/')));
}

// Marks ``path`` in the tree, opening the groups above it and scrolling it into sight.
function showInTree(path) {
  const parts = path.split('/').filter(Boolean);
  for (let i = 0; i < parts.length; i += 1) treeNodes.get('/' + parts.slice(0, i).join('/'))?.expand?.(true);
  for (const node of document.querySelectorAll('#tree .node.selected')) node.classList.remove('selected');
  const node = document.querySelector(`#tree .node[data-path="${CSS.escape(path)}"]`);
  node?.classList.add('selected');
  node?.scrollIntoView({ block: 'nearest' });
}

// Keys, as the tree role promises: up and down move between the visible items, right opens
// a group (or moves into it), left closes it (or moves to its parent); Enter opens the item.
$('tree').addEventListener('keydown', (e) => {
  const item = e.target.closest?.('.node');
  if (!item || !['ArrowDown', 'ArrowUp', 'ArrowRight', 'ArrowLeft'].includes(e.key)) return;
  e.preventDefault();
  const visible = [...document.querySelectorAll('#tree .node')].filter((n) => n.offsetParent !== null);
  const at = visible.indexOf(item);
  const node = treeNodes.get(item.dataset.path);
  const list = item.parentElement.querySelector(':scope > ul');
  let target = null;
  if (e.key === 'ArrowDown') target = visible[at + 1];
  else if (e.key === 'ArrowUp') target = visible[at - 1];
  else if (e.key === 'ArrowRight') {
    if (node?.expand && (!list || list.hidden)) node.expand(true);
    else target = visible[at + 1];
  } else if (list && !list.hidden) node.expand(false);
  else target = item.parentElement.parentElement.closest('li')?.querySelector(':scope > .node');
  target?.focus();
});

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
      el('td', { class: 'value' }, el('div', { class: 'clip' }, a.shown !== undefined ? valueText(a.shown) : valueText(a.value, a.type))))))));
}

function datasetParts(domain, entity) {
  const card = section('Dataset', infoTable('dataset-info', datasetRows(entity.dataset)));
  const d = entity.dataset;
  if (d.linked?.class === 'H5D_CHUNKED_REF_INDIRECT' && d.linked.countable) countLinked(domain, entity, card);
  return [card, el('section', { class: 'card', id: 'vis' })];
}

// The chunks of a dataset appended from several files: each file's, counted in the chunk
// table (a read of its own, so that the rest of the page does not wait for it).
async function countLinked(domain, entity, card) {
  try {
    const linked = await getJson('linked', { domain, path: entity.path });
    if (!card.isConnected) return; // another object is shown since (the card is placed before any answer)
    const d = entity.dataset;
    d.linked = linked;
    if (d.stats && linked.allocatedChunks !== undefined) {
      d.stats = { ...d.stats, allocatedChunkCount: linked.allocatedChunks, allocatedSize: linked.allocatedBytes };
    }
    card.querySelector('#dataset-info').replaceWith(infoTable('dataset-info', datasetRows(d)));
  } catch (error) {
    if (card.isConnected) showError(error);
  }
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
  if (shape.class === 'H5S_SCALAR') { showScalar(vis, domain, entity.path).catch(scalarFailed(vis)); return; }
  const dims = shape.dims;
  if (dims.some((n) => n === 0)) { vis.replaceChildren(el('p', { class: 'muted' }, 'No values (empty).')); return; }
  const numeric = isNumericType(type);
  const views = numeric ? (dims.length === 1 ? ['line', 'table'] : ['image', 'table']) : ['table'];
  const interlace = numeric ? trueColorLayout(dims, entity.attributes) : null;
  if (interlace) views.unshift('rgb');
  const body = el('div', { class: 'vis-body' });
  const tabs = el('div', { class: 'tabs' }, views.map((v) => el('button', {
    class: 'tab', 'data-view': v,
    onclick: () => choose(v),
  }, { line: 'Line plot', image: 'Image', table: 'Table', rgb: 'RGB image' }[v])));
  const follow = { on: false, rows: null }; // following, a new shape opens the view on its last ``rows`` rows
  const grown = (newDims) => {
    entity.dataset.shape.dims = newDims;
    $('dataset-info').replaceWith(infoTable('dataset-info', datasetRows(entity.dataset)));
    choose(tabs.querySelector('.active').dataset.view);
  };
  const toggle = el('input', { type: 'checkbox', id: 'follow', onchange: () => {
    following?.abort();
    following = (follow.on = toggle.checked) ? new AbortController() : null;
    if (following) followShape(domain, entity.id, entity.dataset.shape.dims, following.signal, grown);
  } });
  vis.replaceChildren(el('h3', {}, 'Values'), tabs, el('label', { class: 'follow', title: 'show the newest rows as they arrive' }, toggle, ' follow'), body);
  // the indexes of the dimensions that are not shown, shared by the image and the table
  const fixed = dims.slice(0, Math.max(0, dims.length - 2)).map(() => 0);
  const choose = (view) => {
    for (const t of tabs.children) t.classList.toggle('active', t.dataset.view === view);
    const host = el('div', { class: 'view' }); // a fresh host per choice: an older view's answers land nowhere
    body.replaceChildren(host);
    const ctx = { domain, path: entity.path, dims: entity.dataset.shape.dims, type, host, fixed, interlace, dimensions: entity.dataset.dimensions, follow };
    const run = { line: showLine, image: showImage, table: showTable, rgb: showRgb }[view];
    run(ctx).catch(reporter(host));
  };
  choose(views[0]);
}

async function showScalar(vis, domain, path) {
  const found = await getJson('values', { domain, path });
  vis.replaceChildren(el('h3', {}, 'Value'), el('div', { id: 'scalar-value', class: 'scalar' }, valueText(found.value, found.type)));
}

// A scalar that cannot be read says why, as the other views do.
function scalarFailed(vis) {
  return (error) => {
    if (!vis.isConnected) return;
    vis.replaceChildren(el('h3', {}, 'Value'), el('p', { class: 'muted' }, 'The value could not be read (see above).'));
    showError(error);
  };
}

// For a view that loads again on every control: a ticket per load, so that only the answer to
// the latest one is drawn (an older answer arriving last would contradict the controls), and
// none once the view has been replaced.
function latest(host) {
  let count = 0;
  return () => {
    const mine = ++count;
    return () => mine !== count || !host.isConnected;
  };
}

const reporter = (host) => (error) => { if (host.isConnected) showError(error); };

async function showLine({ domain, path, dims, host, follow }) {
  const n = dims[0];
  let range = follow.on && follow.rows ? [Math.max(0, n - follow.rows), n] : [0, n];
  let shown = null; // the last preview drawn: a change of value scale redraws it, unread
  const plotHost = el('div', { class: 'plot' });
  const info = status('');
  const note = el('p', { id: 'line-note', class: 'note', hidden: true });
  const controls = el('div', { class: 'controls' });
  host.replaceChildren(controls, note, plotHost, info, el('div', { id: 'dl' }));
  const scale = el('select', { id: 'value-scale', 'aria-label': 'value scale', onchange: () => draw() },
    Object.entries(VALUE_SCALES).map(([key, s]) => el('option', { value: key }, s.label)));
  const draw = () => {
    if (!shown) return;
    const text = drawLine(plotHost, shown, {
      scale: scale.value,
      onRange: (lo, hi) => { range = [Math.max(0, lo), Math.min(n, hi)]; load().catch(reporter(host)); },
    });
    note.textContent = text ?? '';
    note.hidden = !text;
  };
  const ticket = latest(host);
  const load = async () => {
    const stale = ticket();
    const selection = `${range[0]}:${range[1]}`;
    const preview = await getPreview({ domain, path, selection, width: plotHost.clientWidth || 800 });
    if (stale()) return;
    shown = preview;
    follow.rows = range[1] - range[0];
    draw();
    info.textContent = `indexes ${range[0]}–${range[1] - 1}: ${modeText(preview.header)}`;
    host.querySelector('#dl').replaceChildren(downloads(domain, path, selection));
  };
  const pan = (f) => {
    const w = range[1] - range[0];
    const lo = Math.max(0, Math.min(n - w, range[0] + Math.round(f * w)));
    range = [lo, lo + w];
    load().catch(reporter(host));
  };
  controls.replaceChildren(
    el('button', { onclick: () => pan(-0.5), title: 'pan left' }, '◀'),
    el('button', { onclick: () => pan(0.5), title: 'pan right' }, '▶'),
    el('button', { onclick: () => { range = [0, n]; load().catch(reporter(host)); } }, 'Reset zoom'),
    el('label', {}, 'value scale ', scale),
    el('span', { class: 'muted' }, ' drag across the plot to zoom in'),
  );
  await load();
}

// The dimension scale attached to dimension ``d`` (HDF5's DIMENSION_LIST: the first one, as
// h5py's dims[d][0]), if it can label the axis: 1-D, numeric, as long as the dimension. Answers
// {id, label} or {why} (it cannot: the axis shows indexes), or null when none is attached.
// H5Web plots against NeXus axes only (dimension scales: silx-kit/h5web#1313, open); the rules
// follow its proposal (#2035): a missing, non-numeric or wrong-length scale leaves indexes.
async function dimensionScale(domain, dimensions, d, size) {
  const id = dimensions?.[d]?.scales?.[0]?.id;
  if (!id) return null;
  const scale = await getRest(`/datasets/${encodeURIComponent(id)}`, { domain });
  const label = dimensions[d].label;
  const dims = scale.shape?.dims ?? [];
  if (!isNumericType(scale.type) || isComplexType(scale.type)) return { why: 'its values are not numbers' };
  if (dims.length !== 1 || dims[0] !== size) return { why: `its shape ${dims.join(' × ') || 'scalar'} is not the dimension's ${size}` };
  return { id, label: label || 'dimension scale' };
}

// A scale's values over dataset indexes [start, start + count] (the edge after the region
// too, when there is one), at most about 1024 of them: {idx, val}, or {why} when they are not
// strictly monotonic (an axis cannot follow them).
async function scaleSamples(domain, scale, start, count, size) {
  const step = Math.max(1, Math.ceil(count / 1024));
  const stop = Math.min(size, start + count + 1);
  const found = await getRest(`/datasets/${encodeURIComponent(scale.id)}/value`, { domain, select: `[${start}:${stop}:${step}]` });
  const val = found.value.map(Number);
  const idx = val.map((_, j) => start + j * step);
  const sign = Math.sign(val[val.length - 1] - val[0]);
  const monotonic = val.every((v, j) => Number.isFinite(v) && (j === 0 || Math.sign(v - val[j - 1]) === sign));
  return monotonic && (sign !== 0 || val.length === 1) ? { idx, val } : { why: 'its values are not strictly increasing or decreasing' };
}

async function showImage({ domain, path, dims, host, fixed, dimensions, follow }) {
  const rank = dims.length;
  const shownDims = [rank - 2, rank - 1];
  const scales = await Promise.all(shownDims.map((d) => dimensionScale(domain, dimensions, d, dims[d])
    .catch((error) => ({ why: `it could not be read: ${error.message}` }))));
  if (!host.isConnected) return;
  const nr = dims[rank - 2];
  let region = { rows: [follow.on && follow.rows ? Math.max(0, nr - follow.rows) : 0, nr], cols: [0, dims[rank - 1]] };
  let shown = null; // the last preview drawn: a change of colour scale redraws it, unread
  const plotHost = el('div', { class: 'plot' });
  const info = status('');
  const note = status('');
  note.id = 'scale-note';
  const axisNote = el('p', { id: 'axis-note', class: 'note', hidden: true });
  const hover = status('');
  hover.id = 'hover';
  const scale = el('select', { id: 'colour-scale', 'aria-label': 'colour scale', onchange: () => draw() },
    Object.entries(SCALES).map(([key, s]) => el('option', { value: key }, s.label)));
  host.replaceChildren(sliders(dims, fixed, () => load().catch(reporter(host)), dimensions), el('div', { class: 'controls' },
    el('button', { onclick: () => { region = { rows: [0, dims[rank - 2]], cols: [0, dims[rank - 1]] }; load().catch(reporter(host)); } }, 'Reset zoom'),
    el('label', {}, 'colour scale ', scale),
    el('label', { title: 'square cells (as H5Web\'s aspect ratio "equal"); unticked, the image fills the width' },
      el('input', { type: 'checkbox', id: 'keep-ratio', checked: keepRatio, onchange: (e) => { keepRatio = e.target.checked; draw(); } }),
      ' keep aspect ratio'),
    el('span', { class: 'muted' }, ' drag a rectangle on the image to zoom in')), axisNote, plotHost, note, info, hover,
  el('div', { id: 'dl' }));
  const draw = () => {
    if (!shown) return;
    const { preview, at, axes } = shown;
    const names = ['y', 'x'];
    note.textContent = drawHeatmap(plotHost, preview, {
      scale: scale.value,
      axes,
      keepRatio,
      onZoom: (r) => { region = r; load().catch(reporter(host)); },
      onHover: (r, c, v, y, x) => {
        const where = [axes.rows, axes.cols].map((a, k) => (a.scale ? `, ${a.label || names[k]} = ${num([y, x][k])}` : '')).join('');
        hover.textContent = `[${[...at, r, c].join(', ')}] ≈ ${num(v)}${where}`;
      },
    }) ?? '';
  };
  // the axes of the region shown: a usable dimension scale's values there, or indexes
  const axesFor = async (header) => {
    const why = [];
    const axes = await Promise.all(shownDims.map(async (d, k) => {
      const index = { label: `${k ? 'column' : 'row'} index (${dimName(dimensions, d)})`, scale: null };
      const found = scales[k];
      if (!found) return index;
      let samples = found;
      if (found.id) {
        samples = await scaleSamples(domain, found, header.start[k], header.shape[k], dims[d])
          .catch((error) => ({ why: `it could not be read: ${error.message}` }));
      }
      if (samples.why) { why.push(`${dimName(dimensions, d)}: its dimension scale is not used (${samples.why}); the axis shows indexes.`); return index; }
      return { label: found.label, scale: samples };
    }));
    axisNote.textContent = why.join(' ');
    axisNote.hidden = !why.length;
    return { rows: axes[0], cols: axes[1] };
  };
  const ticket = latest(host);
  const load = async () => {
    const stale = ticket();
    const selection = [...fixed, `${region.rows[0]}:${region.rows[1]}`, `${region.cols[0]}:${region.cols[1]}`].join(',');
    const width = Math.max(200, plotHost.clientWidth - 170);
    const preview = await getPreview({ domain, path, selection, width, height: Math.round(width * 0.75) });
    const axes = await axesFor(preview.header);
    if (stale()) return;
    shown = { preview, at: [...fixed], axes };
    follow.rows = region.rows[1] - region.rows[0];
    draw();
    plotHost.dataset.selection = selection;
    info.textContent = `rows ${region.rows[0]}–${region.rows[1] - 1}, columns ${region.cols[0]}–${region.cols[1] - 1}: ${modeText(preview.header)}`;
    host.querySelector('#dl').replaceChildren(downloads(domain, path, selection));
  };
  await load();
}

// Rows of the first shown dimension and columns of the last (a 2-D slice of N-D data, at the
// sliders' indexes), a page at a time; a row number jumps there.
async function showTable({ domain, path, dims, type, host, fixed, dimensions, follow }) {
  const rank = dims.length;
  const rowCount = rank > 1 ? dims[rank - 2] : dims[0];
  const colCount = rank > 1 ? dims[rank - 1] : 1;
  let start = follow.on ? Math.max(0, rowCount - TABLE_ROWS) : 0;
  let colStart = 0;
  const tableHost = el('div', { class: 'table-wrap' });
  const info = status('');
  const reload = () => load().catch(reporter(host));
  const button = (text, title, onclick) => el('button', { title, onclick: () => { onclick(); reload(); } }, text);
  const prev = button('◀ rows', 'previous rows', () => { start = Math.max(0, start - TABLE_ROWS); });
  const next = button('rows ▶', 'next rows', () => { start += TABLE_ROWS; });
  const left = button('◀ columns', 'previous columns', () => { colStart = Math.max(0, colStart - TABLE_COLS); });
  const right = button('columns ▶', 'next columns', () => { colStart += TABLE_COLS; });
  const goto = el('input', {
    type: 'number', id: 'goto-row', min: 0, max: rowCount - 1, placeholder: 'row', 'aria-label': 'go to row',
    onchange: () => {
      const row = Math.floor(Number(goto.value));
      if (Number.isFinite(row)) { start = Math.max(0, Math.min(rowCount - 1, row)); reload(); }
    },
  });
  host.replaceChildren(sliders(dims, fixed, reload, dimensions),
    el('div', { class: 'controls' }, prev, next, colCount > TABLE_COLS ? [left, right] : [], 'go to row ', goto),
    info, tableHost, el('div', { id: 'dl' }));
  const ticket = latest(host);
  const load = async () => {
    const stale = ticket();
    const rowSel = `${start}:${Math.min(rowCount, start + TABLE_ROWS)}`;
    const colSel = `${colStart}:${Math.min(colCount, colStart + TABLE_COLS)}`;
    const selection = (rank > 1 ? [...fixed, rowSel, colSel] : [rowSel]).join(',');
    const found = await getJson('values', { domain, path, selection });
    if (stale()) return;
    const fields = type.class === 'H5T_COMPOUND' && !isComplexType(type) ? type.fields.map((f) => f.name) : null;
    const rows = found.value;
    let head;
    let cells;
    if (rank > 1) {
      head = rows[0].map((_, j) => String(colStart + j));
      cells = (row) => row.map((v) => el('td', {}, valueText(v, type)));
    } else if (fields) {
      head = fields;
      cells = (row) => row.map((v) => el('td', {}, valueText(v)));
    } else {
      head = ['value'];
      cells = (v) => [el('td', {}, valueText(v, type))];
    }
    tableHost.replaceChildren(el('table', { id: 'values', class: 'grid' },
      el('thead', {}, el('tr', {}, el('th', {}, '#'), head.map((h) => el('th', {}, h)))),
      el('tbody', {}, rows.map((row, i) => el('tr', {}, el('th', {}, String(start + i)), cells(row))))));
    const colText = rank > 1 ? `, columns ${colStart}–${colStart + head.length - 1} of ${colCount}` : '';
    const at = fixed.length ? ` (at [${fixed.join(', ')}, …])` : '';
    info.textContent = `rows ${start}–${start + rows.length - 1} of ${rowCount}${colText}${at}`;
    prev.disabled = start === 0;
    next.disabled = start + TABLE_ROWS >= rowCount;
    left.disabled = colStart === 0;
    right.disabled = colStart + TABLE_COLS >= colCount;
    host.querySelector('#dl').replaceChildren(downloads(domain, path, selection));
  };
  await load();
}

route();
