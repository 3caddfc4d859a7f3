#!/usr/bin/env bash
# Counters of a whole fabric read three ways on one served fabric (issue 15): ibsm's performance
# manager (one sweep, `ibsm ctl perfmgr sweep`), stock `ibqueryerrors` and `ibsm counters
# --errors`, both scanning the fabric and reading every port's PortCounters. The fabric is
# `ibsm sim serve SPEC`; `ibsm run` (perfmgr TRUE, no periodic sweeps) is its SM on the first CA,
# the scanners run on the second CA, and every program runs under ibsim's libumad2sim.so.
#
# usage: tests/perfmgr-vs-ibqueryerrors.sh [--runs N] [SPEC]   (default fat-tree:3,16, 3 runs)
#
# Prints one line per measurement:
#   PERF <spec> <what> ports=<n> seconds=<s>
# Environment: IBSM_BIN (default: cargo build --release -p ibsm, target/release/ibsm).
set -uo pipefail

cd "$(dirname "$0")/.."
root=$PWD
spec=fat-tree:3,16
runs=3
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs=${2:-}; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/{/^set -uo/d;p}' "$0"; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) spec=$1; shift ;;
    esac
done
for prog in ibqueryerrors; do
    command -v "$prog" >/dev/null || { echo "$prog not installed (apt-get install infiniband-diags)" >&2; exit 2; }
done
shim=
for d in /usr/lib/x86_64-linux-gnu/umad2sim /usr/lib64/umad2sim /usr/lib/umad2sim; do
    [ -f "$d/libumad2sim.so" ] && shim=$d/libumad2sim.so
done
[ -n "$shim" ] || { echo "libumad2sim.so not found (apt-get install ibsim-utils)" >&2; exit 2; }
ibsm=${IBSM_BIN:-}
if [ -z "$ibsm" ]; then
    cargo build -q --release -p ibsm || exit 2
    ibsm=$root/target/release/ibsm
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/perfmgr-bench.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
wait_for() { # what file pattern seconds
    for _ in $(seq $(( $4 * 10 ))); do grep -q "$3" "$2" 2>/dev/null && return 0; sleep 0.1; done
    echo "$1: timed out" >&2; exit 1
}
"$ibsm" topo "$spec" --write-net "$work/fabric.net" > /dev/null || exit 2
ca_name() { awk -v n="$1" '/^(Hca|Ca)[ \t]/ { if (++i == n) { split($0, f, "\""); print f[2]; exit } }' "$work/fabric.net"; }
sm_host=$(ca_name 1)
cl_host=$(ca_name 2)
export IBSIM_SOCKNAME=pmb$$
"$ibsm" sim serve "$work/fabric.net" --socket-name "$IBSIM_SOCKNAME" > "$work/sim.log" 2>&1 &
pids+=($!)
wait_for "ibsm sim serve" "$work/sim.log" ready 600
printf 'perfmgr TRUE\nperfmgr_sweep_time_s 0\nsweep_interval 0\nforce_log_flush TRUE\n' > "$work/ibsm.conf"
(cd "$work" && SIM_HOST=$sm_host LD_PRELOAD=$shim OSM_CACHE_DIR=$work exec "$ibsm" run -F "$work/ibsm.conf" \
    -f "$work/ibsm.log" --ctl-socket "$work/ctl.sock" > "$work/run.out" 2>&1) &
pids+=($!)
wait_for "ibsm run" "$work/ibsm.log" "SUBNET UP" 900
ctl() { "$ibsm" ctl --socket "$work/ctl.sock" "$@"; }
sweeps() { ctl perfmgr status | awk '/^perfmgr sweeps:/ { print $3 }'; }
for _ in $(seq 600); do [ "$(sweeps)" -ge 1 ] 2>/dev/null && break; sleep 0.1; done
for r in $(seq "$runs"); do
    n=$(sweeps)
    ctl perfmgr sweep > /dev/null
    for _ in $(seq 6000); do
        s=$(ctl perfmgr status)
        [ "$(sweeps)" -gt "$n" ] && ! grep -q '(sweeping)' <<<"$s" && break
        sleep 0.1
    done
    # "last sweep: N ports in S s, …"
    awk -v spec="$spec" '/^last sweep:/ { print "PERF " spec " ibsm-perfmgr-sweep ports=" $3 " seconds=" $6 }' <<<"$s"
    for tool in ibqueryerrors "$ibsm counters --errors"; do
        t0=$(date +%s.%N)
        (cd "$work" && SIM_HOST=$cl_host LD_PRELOAD=$shim $tool > "$work/out" 2>&1)
        t1=$(date +%s.%N)
        ports=$(awk '/ports checked/ { print $2 }' "$work/out")
        name=$(basename "${tool%% *}")
        [ "$name" = ibsm ] && name=ibsm-counters-errors
        [ -n "$ports" ] || { echo "$tool failed:" >&2; cat "$work/out" >&2; exit 1; }
        printf 'PERF %s %s ports=%s seconds=%.3f\n' "$spec" "$name" "$ports" "$(echo "$t1 - $t0" | bc)"
    done
done
