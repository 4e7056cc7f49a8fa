// Text for types, numbers, sizes and times, and a tiny element builder.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v === true ? '' : v);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

const BASES = /^H5T_(STD|IEEE)_([IUFB])(\d+)(LE|BE)$/;

function baseName(base) {
  const m = BASES.exec(base ?? '');
  if (!m) return String(base);
  const kind = { I: 'int', U: 'uint', F: 'float', B: 'bitfield' }[m[2]];
  return `${kind}${m[3]}${m[4] === 'BE' ? ' (big-endian)' : ''}`;
}

export function typeText(t) {
  if (typeof t === 'string') return baseName(t);
  if (!t) return '?';
  const committed = t.id ? ` [committed ${t.id}]` : '';
  switch (t.class) {
    case 'H5T_INTEGER':
    case 'H5T_FLOAT':
      return baseName(t.base) + (t.hdf5Class === 'H5T_BITFIELD' ? ' bitfield' : '') + committed;
    case 'H5T_BITFIELD':
      return baseName(t.base) + committed;
    case 'H5T_STRING': {
      const length = t.length === 'H5T_VARIABLE' ? 'variable length' : `${t.length} bytes`;
      const cset = t.charSet === 'H5T_CSET_UTF8' ? 'UTF-8' : 'ASCII';
      return `string (${length}, ${cset})${committed}`;
    }
    case 'H5T_COMPOUND':
      return `compound {${t.fields.map((f) => `${f.name}: ${typeText(f.type)}`).join(', ')}}${committed}`;
    case 'H5T_ENUM':
      return `enum ${typeText(t.base)} {${t.members.map((m) => `${m.name}=${m.value}`).join(', ')}}${committed}`;
    case 'H5T_ARRAY':
      return `array [${t.dims.join(' × ')}] of ${typeText(t.base)}${committed}`;
    case 'H5T_VLEN':
      return `variable-length sequence of ${typeText(t.base)}${committed}`;
    case 'H5T_REFERENCE':
      return `reference (${t.base === 'H5T_STD_REF_OBJ' ? 'object' : 'region'})${committed}`;
    case 'H5T_OPAQUE':
      return `opaque (${t.size} bytes${t.tag ? `, ${t.tag}` : ''})${committed}`;
    default:
      return t.class + committed;
  }
}

export function isNumericType(t) {
  if (!t) return false;
  if (t.class === 'H5T_ENUM') return isNumericType(t.base);
  return ['H5T_INTEGER', 'H5T_FLOAT', 'H5T_BITFIELD'].includes(t.class);
}

export function shapeText(shape) {
  if (!shape) return '?';
  if (shape.class === 'H5S_NULL') return 'null (no values)';
  if (shape.class === 'H5S_SCALAR') return 'scalar';
  return shape.dims.join(' × ');
}

export function maxShapeText(shape) {
  if (!shape?.maxdims) return shape?.dims ? shape.dims.join(' × ') : '—';
  return shape.maxdims.map((n) => (n === 0 || n === 'H5S_UNLIMITED' ? '∞' : n)).join(' × ');
}

export function num(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'string') return v;
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-4 || a >= 1e7)) return v.toExponential(5).replace(/\.?0+e/, 'e');
  return String(Number(v.toPrecision(7)));
}

export function bytes(n) {
  if (n === null || n === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

export function when(seconds) {
  if (!seconds) return '—';
  return new Date(seconds * 1000).toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
}

// h5py writes a complex number as a compound of two floats named r and i (as H5Web reads it)
export function isComplexType(t) {
  return t?.class === 'H5T_COMPOUND' && t.fields.length === 2 && t.fields[0].name === 'r'
    && t.fields[1].name === 'i' && t.fields.every((f) => f.type?.class === 'H5T_FLOAT');
}

function complexText([re, im]) {
  const negative = Number(im) < 0 || Object.is(im, -0);
  return `${num(re)} ${negative ? '−' : '+'} ${num(Math.abs(Number(im)))}i`;
}

// A value as text; ``type`` (when given) shows complex numbers as a + bi, also inside arrays.
export function valueText(v, type) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'number') return num(v);
  if (typeof v === 'string') return v;
  if (isComplexType(type) && Array.isArray(v)) {
    if (v.length === 2 && !Array.isArray(v[0])) return complexText(v);
    return `[${v.map((x) => valueText(x, type)).join(', ')}]`;
  }
  return JSON.stringify(v);
}

// About ``count`` round values (1, 2 or 5 times a power of ten apart) from lo to hi, as d3's
// ticks are; ``integer`` keeps the step at 1 or more (index axes).
export function niceTicks(lo, hi, count, integer = false) {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [];
  if (lo > hi) [lo, hi] = [hi, lo];
  if (lo === hi) return [lo];
  const raw = (hi - lo) / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const f = raw / power;
  let step = (f >= 7.07 ? 10 : f >= 3.16 ? 5 : f >= 1.41 ? 2 : 1) * power;
  if (integer) step = Math.max(1, Math.round(step));
  const out = [];
  for (let k = Math.ceil(lo / step); k * step <= hi + step * 1e-9; k += 1) out.push(Number((k * step).toPrecision(12)));
  return out;
}

export function status(text) {
  return el('div', { class: 'status muted' }, text);
}

// How a preview was reduced, and what it cost, for a plot's status line.
export function modeText(h) {
  const what = { full: 'every value', mean: 'block means', minmax: 'min/max per pixel', stride: 'sampled' }[h.mode];
  const step = h.step.some((s) => s > 1) ? `, step ${h.step.join(' × ')}` : '';
  const gaps = h.mode === 'stride' ? ' (too large to read whole: values between samples are not shown; zoom in)' : '';
  return `${what}${step}${gaps} — ${bytes(h.bytes)} transferred`;
}
