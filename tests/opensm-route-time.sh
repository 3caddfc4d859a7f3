#!/usr/bin/env bash
# Route computation time of one routing engine, OpenSM's and ibsm's, on the same fabric.
#
#   tests/opensm-route-time.sh SPEC ENGINE [OUTDIR]
#
# SPEC is an ibsm generator spec (fat-tree:3,24, torus:8,8,8, random:...); ENGINE an engine both
# have (dfsssp, nue, lash, torus-2QoS, dor, sssp, minhop, updn, ...).
#
# OpenSM: stock `opensm -o -Q -R ENGINE` (cold cache, log flags 0x07) on a fresh ibsim of SPEC
# (written with `ibsm topo`; torus-2QoS gets the generated torus's torus-2QoS.conf from `ibsm
# topo --write-torus-conf`). Its route time is the interval between two lines of its own log:
# the first "ucast_mgr_route: building routing with '<engine>'" (osm_ucast_mgr.c, before the
# engine's first step) and "<engine> tables configured on all switches" (the end of
# osm_ucast_mgr_process: the engine, then queueing the LFT Sets). If OpenSM fell back to
# another engine the line names that one, and the script says so (the interval then includes
# the failed attempt). OPENSM=0 skips OpenSM.
#
# ibsm: `cargo bench -p sm --bench route_vl -- ENGINE SPEC` — the engine alone on the same
# generated fabric (VLCap VL0-7 as ibsim's ports, -Q, max_op_vls 5), best of 3 on 1 and on 2
# threads. IBSM=0 skips it.
#
# FAULT=link:NAME:PORT or FAULT=switch:NAME breaks the fabric first, the same for both SMs
# (`ibsm topo --fault` for OpenSM's .net, ROUTE_VL_FAULT for the bench). LMC=N gives every end
# port 2^N LIDs in both (OpenSM's -l N, ROUTE_VL_LMC for the bench; default 0).
#
# OUTDIR (default a fresh directory under ${TMPDIR:-/tmp}) keeps osm.log, time.txt (/usr/bin/time
# -v of OpenSM) and bench.txt. Prints one summary line per SM.
# Needs Debian's opensm, ibsim-utils and time, and cargo.
set -u

if [ $# -lt 2 ]; then
    sed -n '2,/^set -u/p' "$0" | sed -n 's/^# \{0,1\}//p'
    exit 2
fi
spec=$1 engine=$2
lmc=${LMC:-0}
case $lmc in
[0-7]) ;;
*) echo "LMC=$lmc: not an LMC (0..7)" >&2; exit 2 ;;
esac
outdir=${3:-$(mktemp -d "${TMPDIR:-/tmp}/route-time.XXXXXX")}
mkdir -p "$outdir" || exit 2
outdir=$(cd "$outdir" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
ibsm() {
    if [ -n "${IBSM_BIN:-}" ]; then "$IBSM_BIN" "$@"; else
        (cd "$repo" && cargo run --quiet --release -p ibsm -- "$@"); fi
}

# "Mon DD HH:MM:SS USEC ..." -> seconds in the day.
stamp() { awk '{ split($3, t, ":"); printf "%.6f\n", t[1]*3600 + t[2]*60 + t[3] + $4/1e6 }'; }

if [ "${OPENSM:-1}" != 0 ]; then
    shim=
    for lib in /usr/lib/*/umad2sim/libumad2sim.so /usr/lib/umad2sim/libumad2sim.so; do
        if [ -f "$lib" ]; then shim=$lib; break; fi
    done
    for tool in ibsim opensm; do
        command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install -y opensm ibsim-utils)" >&2; exit 2; }
    done
    [ -n "$shim" ] && [ -x /usr/bin/time ] || { echo "missing libumad2sim.so or /usr/bin/time" >&2; exit 2; }
    net=$outdir/topology.net
    extra=()
    conf=()
    if [ "$engine" = torus-2QoS ]; then
        conf=(--write-torus-conf "$outdir/torus-2QoS.conf")
        extra=(--torus_config "$outdir/torus-2QoS.conf")
    fi
    fault=()
    [ -z "${FAULT:-}" ] || fault=(--fault "$FAULT")
    ibsm topo "$spec" --write-net "$net" "${conf[@]}" "${fault[@]}" >/dev/null || exit 2
    (
        cd "$outdir" || exit 2
        export IBSIM_SOCKNAME="route-time-$$"
        ibsim -s -n -N 30000 -S 4000 -P 200000 "$net" >ibsim.out 2>&1 &
        ibsim_pid=$!
        trap 'kill "$ibsim_pid" 2>/dev/null; wait "$ibsim_pid" 2>/dev/null' EXIT
        for _ in $(seq 300); do
            grep -q ready ibsim.out 2>/dev/null && break
            kill -0 "$ibsim_pid" 2>/dev/null || { cat ibsim.out >&2; exit 1; }
            sleep 0.1
        done
        OSM_CACHE_DIR=$outdir OSM_TMP_DIR=$outdir nice /usr/bin/time -v -o time.txt \
            env LD_PRELOAD="$shim" opensm -o -e -s 0 -d 0 -Q -l "$lmc" -R "$engine" -f "$outdir/osm.log" \
            -D 0x07 "${extra[@]}" >osm.stdout 2>&1
    )
    start=$(grep -m1 'ucast_mgr_route: building routing with' "$outdir/osm.log" | stamp)
    endline=$(grep -m1 -e 'tables configured on all switches' -e 'No routing engine able' "$outdir/osm.log")
    used=$(sed -n 's/.*osm_ucast_mgr_process: \(.*\) tables configured.*/\1/p' <<<"$endline")
    if [ -z "$start" ] || [ -z "$endline" ]; then
        echo "OpenSM $engine on $spec: no routing interval in $outdir/osm.log" >&2
        exit 1
    fi
    end=$(stamp <<<"$endline")
    secs=$(awk -v a="$start" -v b="$end" 'BEGIN { d = b - a; if (d < 0) d += 86400; printf "%.3f", d }')
    note=
    if [ "$used" != "$engine" ]; then
        # The engine failed: how long it took to fail, and why (its ERR line).
        next=$(grep 'ucast_mgr_route: building routing with' "$outdir/osm.log" | sed -n 2p | stamp)
        failed=$(awk -v a="$start" -v b="${next:-$start}" 'BEGIN { d = b - a; if (d < 0) d += 86400; printf "%.3f", d }')
        why=$(grep -m1 'ERR ' "$outdir/osm.log" | sed 's/.*-> //')
        note=" (OpenSM's $engine failed after ${failed} s: ${why:-see osm.log}; then ${used:-no engine} routed)"
    fi
    echo "OpenSM $engine on $spec: route ${secs} s$note; whole run $(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$outdir/time.txt"), $(sed -n 's/.*Maximum resident set size (kbytes): //p' "$outdir/time.txt") KiB max RSS"
fi

if [ "${IBSM:-1}" != 0 ]; then
    (cd "$repo" && ROUTE_VL_FAULT=${FAULT:-} ROUTE_VL_LMC=$lmc cargo bench --quiet -p sm --bench route_vl -- "$engine" "$spec") >"$outdir/bench.txt" 2>&1
    grep -v -e '^ *Finished' -e '^ *Running' -e '^ *Compiling' "$outdir/bench.txt" | sed "s/^/ibsm: /"
fi
echo "kept in $outdir"
