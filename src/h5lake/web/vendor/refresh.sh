#!/usr/bin/env bash
# Refresh the vendored uPlot (https://github.com/leeoniya/uPlot, MIT) from the npm registry.
# Needs npm; `pip install` of h5lake never does: the built files below are committed.
#   bash src/h5lake/web/vendor/refresh.sh [VERSION]
set -euo pipefail
cd "$(dirname "$0")"
version="${1:-1.6.32}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "uplot@${version}" >/dev/null && tar xzf uplot-*.tgz)
cp "$work/package/dist/uPlot.esm.js" uplot.esm.js
cp "$work/package/dist/uPlot.min.css" uplot.min.css
cp "$work/package/LICENSE" uplot.LICENSE
echo "uplot ${version}" > VERSIONS
echo "vendored uPlot ${version}"
