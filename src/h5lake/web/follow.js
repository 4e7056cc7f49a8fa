// Following a dataset as it grows: the watch of the HDF REST API (docs/api.md, "Live data").
// GET /datasets/{id}/shape?wait=S with If-None-Match naming the last reply's ETag answers 200
// with the new shape as soon as the dataset changes, 304 after S seconds; the loop asks again
// until its signal aborts (the toggle is turned off, or the page shows something else).

const WAIT_SECONDS = 20;
const RETRY_MS = 2000; // after a failed request (the server restarting, a network error)

// Calls onShape(dims) whenever the dataset's shape is not ``dims`` (the one shown), until
// signal aborts.
export async function followShape(domain, id, dims, signal, onShape) {
  const url = `${window.location.origin}/datasets/${encodeURIComponent(id)}/shape?${new URLSearchParams({ domain, wait: WAIT_SECONDS })}`;
  let etag = null;
  while (!signal.aborted) {
    try {
      const headers = etag ? { 'If-None-Match': etag } : {};
      const response = await fetch(url, { headers, signal, cache: 'no-store' });
      if (response.status === 200) {
        etag = response.headers.get('ETag');
        const now = (await response.json()).shape.dims;
        if (String(now) !== String(dims) && !signal.aborted) onShape((dims = now));
      } else if (response.status !== 304) {
        await pause(RETRY_MS, signal);
      }
    } catch (error) {
      if (signal.aborted) return;
      await pause(RETRY_MS, signal);
    }
  }
}

function pause(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}
