#!/usr/bin/env bash
# ibsm's side of the table "Where the targets stand" in docs/benchmarks.md (issue 14): route
# computation of every VL engine on the fabrics OpenSM was timed on, best 1-thread wall.
#
#   tests/route-vl-table.sh [ROUNDS] [FILTER]
#
# Builds `cargo bench -p sm --bench route_vl` once, then runs every (engine, fabric) ROUNDS
# times (default 3) in turn, each run being N routes on 1 and on 2 threads (VLCap VL0-7, -Q,
# max_op_vls 5, as tests/opensm-route-time.sh). Prints one line per (engine, fabric): the best
# 1-thread wall over the rounds (for an engine that fails, up to its error, which is printed
# too). FILTER (a grep -E pattern on "ENGINE SPEC") picks rows. OpenSM's side is
# tests/opensm-route-time.sh SPEC ENGINE.
set -u
rounds=${1:-3}
filter=${2:-.}
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 2
bench=$(cargo bench -p sm --bench route_vl --no-run 2>&1 |
    sed -n 's/.*Executable benches\/route_vl.rs (\(.*\))/\1/p')
if [ -z "$bench" ] || [ ! -x "$bench" ]; then
    echo "route-vl-table: could not build the route_vl bench" >&2
    exit 1
fi
# engine, fabric, routes per run (about a second of work each).
rows="torus-2QoS torus:8,8,8 20
nue torus:8,8,8 10
lash torus:8,8,8 10
dfsssp torus:8,8,8 5
sssp torus:8,8,8 20
nue random:128,512,64,7 40
lash random:128,512,64,7 20
dfsssp random:128,512,64,7 20
sssp random:128,512,64,7 40
nue random:256,2048,1024,7 10
nue random:512,4096,2048,7 5
nue random:1024,8192,4096,7 3
nue fat-tree:3,24 5
dfsssp fat-tree:3,24 5
lash fat-tree:3,24 5
sssp fat-tree:3,24 5
nue fat-tree:3,36 2
dfsssp fat-tree:3,36 2
dor mesh:8,8,8 20
dor hypercube:9 20"
rows=$(grep -E -- "$filter" <<<"$rows")
if [ -z "$rows" ]; then
    echo "route-vl-table: no row matches '$filter'" >&2
    exit 2
fi
declare -A best fail
for _ in $(seq "$rounds"); do
    while read -r engine spec n; do
        line=$("$bench" "$engine" "$spec" 4 "$n" 2>&1 | grep -E "^$engine +1 thread")
        key="$engine $spec"
        case $line in
        *failed*) fail[$key]=${line#*: } ;;
        *" wall"*) ;;
        *)
            echo "route-vl-table: $key: no result" >&2
            continue
            ;;
        esac
        # "1 thread  9.3 ms wall" or "1 thread  failed after 34.0 ms wall", in ms.
        ms=$(sed -E 's/.*1 thread +(failed after )?([0-9.]+) (ms|s) wall.*/\2 \3/' <<<"$line" |
            awk '{ print ($2 == "s") ? $1 * 1000 : $1 }')
        if [ -z "${best[$key]:-}" ] || awk -v a="$ms" -v b="${best[$key]}" 'BEGIN { exit !(a < b) }'; then
            best[$key]=$ms
        fi
    done <<<"$rows"
done
printf '%-10s %-28s %s\n' engine fabric "best 1-thread wall"
while read -r engine spec _; do
    key="$engine $spec"
    if [ -n "${fail[$key]:-}" ]; then
        printf '%-10s %-28s fails after %s ms: %s\n' "$engine" "$spec" "${best[$key]:-?}" "${fail[$key]}"
    else
        printf '%-10s %-28s %s ms\n' "$engine" "$spec" "${best[$key]:-?}"
    fi
done <<<"$rows"
