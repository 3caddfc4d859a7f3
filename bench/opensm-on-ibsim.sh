#!/usr/bin/env bash
# Runs stock OpenSM once (-o, cold cache) on a fresh ibsim fabric and keeps what it and the
# diags saw, for the OpenSM rows of docs/benchmarks.md.
#
#   bench/opensm-on-ibsim.sh TOPOLOGY ENGINE OUTDIR [more opensm options]
#
# TOPOLOGY is an ibsim .net file or an ibsm generator spec (fat-tree:3,36 ...; written to
# OUTDIR/topology.net with `ibsm topo`). ENGINE is OpenSM's -R. OUTDIR receives:
#   osm.log                          OpenSM's log (-f), with "... tables configured", SUBNET UP
#   opensm-lfts.dump, opensm-subnet.lst, guid2lid ...   OpenSM's dump files (-D 0x43)
#   fts.txt, link.txt, net.txt       dump_fts, iblinkinfo and ibnetdiscover through the shim
#   time.txt                         /usr/bin/time -v of the OpenSM process
# The ibsm binary is $IBSM if set, else `cargo run --release -p ibsm --`.
# Needs Debian's opensm, ibsim-utils, infiniband-diags and time.
set -u

if [ $# -lt 3 ]; then
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
topology=$1 engine=$2 outdir=$3
shift 3

shim=
for lib in /usr/lib/*/umad2sim/libumad2sim.so /usr/lib/umad2sim/libumad2sim.so; do
    if [ -f "$lib" ]; then shim=$lib; break; fi
done
missing=
for tool in ibsim opensm dump_fts iblinkinfo ibnetdiscover; do
    command -v "$tool" >/dev/null || missing="$missing $tool"
done
[ -x /usr/bin/time ] || missing="$missing time"
[ -n "$shim" ] || missing="$missing libumad2sim.so"
if [ -n "$missing" ]; then
    echo "missing:$missing (apt-get install -y opensm ibsim-utils infiniband-diags time)" >&2
    exit 2
fi

mkdir -p "$outdir" || exit 2
outdir=$(cd "$outdir" && pwd)
if [ -f "$topology" ]; then
    net=$(cd "$(dirname "$topology")" && pwd)/$(basename "$topology")
else
    net=$outdir/topology.net
    if [ -n "${IBSM:-}" ]; then
        "$IBSM" topo "$topology" --write-net "$net" || exit 2
    else
        cargo run --quiet --release -p ibsm -- topo "$topology" --write-net "$net" || exit 2
    fi
fi
cd "$outdir" || exit 2

# A private socket name per run, and the ibsim started here is stopped by its PID.
export IBSIM_SOCKNAME="ibsm-bench-$$"
ibsim -s -n -N 30000 -S 4000 -P 200000 "$net" >ibsim.out 2>&1 &
ibsim_pid=$!
trap 'kill "$ibsim_pid" 2>/dev/null; wait "$ibsim_pid" 2>/dev/null' EXIT
for _ in $(seq 200); do
    grep -q ready ibsim.out 2>/dev/null && break
    kill -0 "$ibsim_pid" 2>/dev/null || { cat ibsim.out >&2; exit 1; }
    sleep 0.1
done

OSM_CACHE_DIR=$outdir OSM_TMP_DIR=$outdir /usr/bin/time -v -o time.txt \
    env LD_PRELOAD="$shim" opensm -o -e -s 0 -d 0 -R "$engine" -f "$outdir/osm.log" -D 0x43 "$@" \
    >osm.stdout 2>&1
status=$?
echo "opensm exit status $status"
LD_PRELOAD="$shim" dump_fts >fts.txt 2>/dev/null
LD_PRELOAD="$shim" iblinkinfo >link.txt 2>/dev/null
LD_PRELOAD="$shim" ibnetdiscover >net.txt 2>/dev/null
grep -h -e 'tables configured' -e 'SUBNET UP' -e 'ERR ' osm.log | head -5
grep -h 'Elapsed (wall' time.txt
exit "$status"
