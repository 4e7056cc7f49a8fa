// Calls to the view's own API (/view/api/...). Same origin: the browser sends the login it
// gave for the page. Every failure becomes an ApiError carrying the server's message.
//
// A page opened as http://user:password@host/view/ has those credentials in its own URL, and
// fetch refuses a URL that holds credentials, as a relative URL resolved against the page's
// would: requests go to the page's origin (which holds none) and carry the login as an
// Authorization header of their own (the browser may not reuse what it sent for the page).

const page = new URL(window.location.href);
const ORIGIN = page.origin;
const LOGIN = page.username ? basic(decodeURIComponent(page.username), decodeURIComponent(page.password)) : null;

function basic(user, password) {
  const utf8 = new TextEncoder().encode(`${user}:${password}`);
  return `Basic ${btoa(String.fromCharCode(...utf8))}`;
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function apiUrl(route, params) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') query.set(k, v);
  }
  return `${ORIGIN}/view/api/${route}?${query}`;
}

async function request(route, params) {
  return fetched(apiUrl(route, params));
}

async function fetched(url) {
  const response = await fetch(url, LOGIN ? { headers: { Authorization: LOGIN } } : {});
  if (!response.ok) {
    let message = response.statusText;
    try {
      const body = await response.json();
      message = body.error?.message ?? body.message ?? message;
    } catch { /* not JSON */ }
    throw new ApiError(response.status, message);
  }
  return response;
}

// The HDF REST API itself (same origin, same login), for what the view's routes do not carry:
// a dataset by id, as a dimension scale is referenced.
export async function getRest(path, params) {
  return (await fetched(`${ORIGIN}${path}?${new URLSearchParams(params)}`)).json();
}

export async function getJson(route, params) {
  return (await request(route, params)).json();
}

// A reduced region: <u32 header length><JSON header><float data>. Lines carry float64 x then y
// (header.lines), images float32 rows of header.dims.
export async function getPreview(params) {
  const buffer = await (await request('preview', params)).arrayBuffer();
  const length = new DataView(buffer).getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, length)));
  const offset = 4 + length;
  header.bytes = buffer.byteLength;
  if (header.lines) {
    const n = (buffer.byteLength - offset) / 16;
    return { header, x: new Float64Array(buffer, offset, n), y: new Float64Array(buffer, offset + 8 * n, n) };
  }
  return { header, data: new Float32Array(buffer, offset) };
}
