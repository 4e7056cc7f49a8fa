// Calls to the view's own API (/view/api/...). Same origin: the browser sends the login it
// gave for the page. Every failure becomes an ApiError carrying the server's message.
//
// A page opened as http://user:password@host/view/ resolves a relative URL against its own,
// which holds those credentials, and fetch refuses such a URL: requests name the page's origin
// (which holds none). The browser keeps the login it gave for the page and sends it with them,
// as it does for a login it asked for.
const ORIGIN = window.location.origin;

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
  return `/view/api/${route}?${query}`;
}

async function request(route, params) {
  return fetched(ORIGIN + apiUrl(route, params));
}

async function fetched(url) {
  const response = await fetch(url);
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
