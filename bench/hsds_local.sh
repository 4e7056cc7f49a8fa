#!/usr/bin/env bash
# Run the reference server, HSDS 1.0.2, on this machine with POSIX storage, to measure h5lake
# beside it (docs/performance.md, "Beside HSDS"). Not used by the tests.
#
#   bench/hsds_local.sh install           # once: a separate venv (never h5lake's) with hsds==1.0.2
#   bench/hsds_local.sh start             # prints HSDS_ENDPOINT=... HSDS_PGID=... and the data dir
#   bench/hsds_local.sh stop              # stops the whole process group it started
#
# Settings (environment): HSDS_VENV (/work/hsdsvenv), HSDS_DIR (a new temporary directory: the
# root dir, its bucket "hsdstest", the passwd file, logs, the pid), HSDS_PORT (5101; its data
# nodes take 6101.. as HSDS fixes them), HSDS_DN_COUNT (4, hsds's default), HSDS_LOG_LEVEL
# (WARNING: its default INFO writes a log line per request, which costs it CPU h5lake does not
# spend). Users and passwords are tests/support/server.py's (admin:admin-pw, test_user1:test1-pw,
# test_user2:test2-pw); /home and
# /home/test_user1 are made after start, as the benches expect a home folder.
#
# The server leads its own process group (setsid), so its CPU is read as the bench reads
# h5lake's: bench/values.py --endpoint "$HSDS_ENDPOINT" --pgid "$HSDS_PGID"; both side by side:
# bench/side_by_side.py --remote hsds="$HSDS_ENDPOINT",$HSDS_PGID.
set -euo pipefail
venv=${HSDS_VENV:-/work/hsdsvenv}
state=${HSDS_STATE:-/tmp/hsds_local.state}
cmd=${1:?usage: $0 install|start|stop}

case "$cmd" in
install)
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q hsds==1.0.2
    ;;
start)
    if [ -f "$state" ]; then
        echo "already started (see $state); stop it first" >&2
        exit 1
    fi
    dir=${HSDS_DIR:-$(mktemp -d /tmp/hsds-local.XXXXXX)}
    port=${HSDS_PORT:-5101}
    mkdir -p "$dir/root/hsdstest"
    printf 'admin:admin-pw\ntest_user1:test1-pw\ntest_user2:test2-pw\n' > "$dir/passwd.txt"
    cd "$dir"
    BUCKET_NAME=hsdstest LOG_LEVEL=${HSDS_LOG_LEVEL:-WARNING} setsid "$venv/bin/hsds" \
        --root_dir "$dir/root" --password_file "$dir/passwd.txt" --host localhost --port "$port" \
        --count "${HSDS_DN_COUNT:-4}" --logfile "$dir/hs.log" --loglevel "${HSDS_LOG_LEVEL:-WARNING}" \
        > "$dir/stdout.log" 2>&1 < /dev/null &
    pid=$!
    printf 'pid=%s\ndir=%s\nport=%s\n' "$pid" "$dir" "$port" > "$state"
    endpoint="http://localhost:$port"
    for _ in $(seq 120); do
        if curl -sf -u admin:admin-pw "$endpoint/about" > /dev/null 2>&1 \
            && curl -sf -u admin:admin-pw "$endpoint/about" | grep -q '"READY"'; then
            break
        fi
        sleep 0.5
    done
    # /home (by the admin), then the user's home owned by that user
    curl -sf -u admin:admin-pw -X PUT "$endpoint/?domain=/home" -d '{"folder": true}' > /dev/null || true
    curl -sf -u admin:admin-pw -X PUT "$endpoint/?domain=/home/test_user1" \
        -d '{"folder": true, "owner": "test_user1"}' > /dev/null || true
    curl -sf -u test_user1:test1-pw "$endpoint/?domain=/home/test_user1" > /dev/null \
        || { echo "HSDS did not come up; see $dir/stdout.log and $dir/hs.log" >&2; exit 1; }
    echo "HSDS_ENDPOINT=$endpoint"
    echo "HSDS_PGID=$pid"
    echo "HSDS_DIR=$dir"
    ;;
stop)
    [ -f "$state" ] || { echo "not started" >&2; exit 0; }
    # shellcheck disable=SC1090
    . "$state"
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 40); do
        kill -0 -- "-$pid" 2>/dev/null || break
        sleep 0.25
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
    rm -f "$state"
    echo "stopped process group $pid (data left in $dir)"
    ;;
*)
    echo "usage: $0 install|start|stop" >&2
    exit 2
    ;;
esac
