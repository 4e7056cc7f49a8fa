#!/usr/bin/env bash
# Run HSDS's REST-level integration suite (tests/integ of github.com/HDFGroup/hsds), unchanged,
# against a fresh h5lake server of this tree, and print pass/fail counts per file.
#
#   dev/run_hsds_integ.sh [--ref REF] HSDS_CHECKOUT_OR_GIT_DIR [FILE...]
#
# HSDS_CHECKOUT_OR_GIT_DIR: a checkout of the hsds repository, or a git dir (a checkout's .git or
# a bare one). Without --ref a checkout's files are used as they are, and a git dir's HEAD; with
# --ref (a branch, tag or commit, e.g. h5json) the suite of that commit is extracted from git.
# FILEs: test files to run (default: all of them, setup_test first). Needs pytest and
# requests-unixsocket (imported by the suite's helper.py); the h5json branch's suite also imports
# the h5json package. Not part of our own test suite: it needs the HSDS repository. Results:
# docs/api.md, "HSDS's REST test suite".
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
ref=
if [ "${1:-}" = --ref ]; then
    ref=${2:?usage: $0 [--ref REF] HSDS_CHECKOUT_OR_GIT_DIR [FILE...]}
    shift 2
fi
src=${1:?usage: $0 [--ref REF] HSDS_CHECKOUT_OR_GIT_DIR [FILE...]}
shift
work=$(mktemp -d /tmp/h5lake-hsds-integ.XXXXXX)
# vlen_test.py of master imports hsds.util.arrayUtil and hdf5dtype (numpy only): the suite
# gets those two modules (and their package files) on its path where the commit has them (the
# h5json branch imports the h5json package instead)
helpers=(hsds/__init__.py hsds/util/__init__.py hsds/util/arrayUtil.py hsds/util/hdf5dtype.py)
mkdir -p "$work/pkg"
if [ -z "$ref" ] && [ -d "$src/tests/integ" ]; then
    cp -r "$src/tests/integ" "$work/integ"
    (cd "$src" && cp --parents "${helpers[@]}" "$work/pkg/" 2>/dev/null) || true
else
    gitdir=$src
    [ -d "$src/.git" ] && gitdir=$src/.git
    commit=$(git --git-dir="$gitdir" rev-parse --verify "${ref:-HEAD}^{commit}")
    echo "HSDS suite of ${ref:-HEAD} at ${commit:0:8}"
    present=()
    for h in "${helpers[@]}"; do
        git --git-dir="$gitdir" cat-file -e "$commit:$h" 2>/dev/null && present+=("$h")
    done
    git --git-dir="$gitdir" archive "$commit" tests/integ "${present[@]}" | tar -x -C "$work"
    mv "$work/tests/integ" "$work/integ"
    [ -d "$work/hsds" ] && mv "$work/hsds" "$work/pkg/hsds"
fi
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
    files=(setup_test.py domain_test.py group_test.py link_test.py attr_test.py dataset_test.py
           datatype_test.py value_test.py pointsel_test.py query_test.py vlen_test.py
           filter_test.py acl_test.py broadcast_test.py)
fi
printf 'admin:admin\ntest_user1:test\ntest_user2:test\n' > "$work/passwd.txt"
port=$(python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export PYTHONPATH="$here/src${PYTHONPATH:+:$PYTHONPATH}"
python -m h5lake.cli.command serve --data "$work/data" --port "$port" --passwd "$work/passwd.txt" \
    --admin admin > "$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/about" > /dev/null && break
    sleep 0.2
done
export HSDS_ENDPOINT="http://127.0.0.1:$port" USER_NAME=test_user1 USER_PASSWORD=test \
    USER2_NAME=test_user2 USER2_PASSWORD=test ADMIN_USERNAME=admin ADMIN_PASSWORD=admin \
    TEST_NOAUTH=
# The suite expects /home/test_user2/ too (ACL and cross-user tests); setup_test.py makes
# /home and /home/test_user1/ itself.
cd "$work/integ"
export PYTHONPATH="$work/pkg:$PYTHONPATH"
count() { echo "$2" | sed -n "s/.*\b\([0-9][0-9]*\) $1.*/\1/p" | grep . || echo 0; }
total_pass=0 total_fail=0
for f in "${files[@]}"; do
    if [ "$f" = setup_test.py ]; then
        USER_NAME=test_user2 python -m pytest -q -p no:cacheprovider -o asyncio_default_fixture_loop_scope=function setup_test.py > /dev/null 2>&1 || true
    fi
    out=$(python -m pytest -q -p no:cacheprovider -o asyncio_default_fixture_loop_scope=function -rf "$f" 2>&1 || true)
    echo "$out" > "$work/${f%.py}.out"
    line=$(echo "$out" | tail -1)
    p=$(count passed "$line") fl=$(( $(count failed "$line") + $(count error "$line") ))
    total_pass=$((total_pass + p)) total_fail=$((total_fail + fl))
    printf '%-20s %4d passed %4d failed\n' "$f" "$p" "$fl"
done
printf '%-20s %4d passed %4d failed\n' total "$total_pass" "$total_fail"
echo "outputs and server log: $work"
