#!/usr/bin/env bash
# SA reference runs (issue 10; the reference for the SA issue): stock OpenSM is the SM and SA of
# a simulated fabric, and stock SA clients query it through libibsm_umad.so, the user_mad shim
# that does RMPP and MAD timeouts as the kernel does.
#
# usage: tests/sa-reference.sh [--server ibsim|ibsm|both] [--keep] [TOPOLOGY.net ...]
#
#   TOPOLOGY.net   ibsim .net files (default: tests/data/sa-reference/*.net — a 3-level fat
#                  tree of 128 CAs, a torus, a random graph with dual-port CAs, written by
#                  `ibsm topo fat-tree:3,8 | torus:4,4,cas=4 | random:16,48,8,7,ports=12
#                  --write-net FILE`)
#   --server       stock ibsim (default), `ibsm sim serve`, or both
#   --keep         keep the work directory (logs, osmtest inventory) and print its path
#
# Environment: IBSM_UMAD_SHIM = the shim (default: built with `cargo build -p umad-shim`),
# IBSM_BIN = the ibsm binary for --server ibsm (default: `cargo build -p ibsm`).
#
# For each topology and server: start the simulator; OpenSM on the first CA of the file until
# SUBNET UP; then, from the second CA, `saquery` (NodeRecords), `saquery -p` (PathRecords),
# `saquery PIR`, `saquery -x` (LinkRecords), `saquery SWIR`, `saquery LFTR`, `saquery -m`,
# each record count compared with what the topology implies; `osmtest -f c` (its inventory's
# node, port, path and link counts compared too), then `osmtest -f a`. One line per check:
#
#   CHECK <topology> <server> <what> got=<n> want=<m> PASS|FAIL <seconds>
#
# and the exit status is 1 if any check failed. Expected counts (LMC 0, LIDs 1..E as OpenSM
# assigns them on a fresh fabric, E = switches + connected CA ports): NodeRecords = E (one per
# LID: a dual-port CA has two);
# PathRecords = E² (every ordered pair of end ports, itself included); PortInfoRecords = every
# switch port 0..N plus every connected CA port; LinkRecords = 2 × links; SwitchInfoRecords =
# switches; LFTRecords = switches × (E / 64 + 1) blocks; MCMemberRecords = 1 (OpenSM's own
# port in the IPoIB broadcast group it creates).
set -uo pipefail

cd "$(dirname "$0")/.."
root=$PWD
servers=(ibsim)
keep=0
nets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --server)
            case "${2:-}" in
                ibsim) servers=(ibsim) ;;
                ibsm) servers=(ibsm) ;;
                both) servers=(ibsim ibsm) ;;
                *) echo "--server: expected ibsim, ibsm or both" >&2; exit 2 ;;
            esac
            shift 2 ;;
        --keep) keep=1; shift ;;
        -h|--help) sed -n '2,/^set -uo/{/^set -uo/d;p}' "$0"; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) nets+=("$1"); shift ;;
    esac
done
[ ${#nets[@]} -gt 0 ] || nets=("$root"/tests/data/sa-reference/*.net)

for prog in opensm osmtest saquery; do
    command -v "$prog" >/dev/null || { echo "$prog not installed (apt-get install opensm infiniband-diags)" >&2; exit 2; }
done
if [[ " ${servers[*]} " == *" ibsim "* ]]; then
    command -v ibsim >/dev/null || { echo "ibsim not installed (apt-get install ibsim-utils)" >&2; exit 2; }
fi
shim=${IBSM_UMAD_SHIM:-}
if [ -z "$shim" ]; then
    cargo build -q -p umad-shim || exit 2
    shim=$root/target/debug/libibsm_umad.so
fi
ibsm=${IBSM_BIN:-}
if [[ " ${servers[*]} " == *" ibsm "* && -z "$ibsm" ]]; then
    cargo build -q -p ibsm || exit 2
    ibsm=$root/target/debug/ibsm
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/sa-reference.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    pids=()
}
trap 'cleanup; [ $keep = 1 ] && echo "work directory: $work" || rm -rf "$work"' EXIT

failed=0
now() { date +%s%N; }
since() { local ms=$(( ($(now) - $1) / 1000000 )); printf '%d.%03d' $((ms / 1000)) $((ms % 1000)); }
check() { # topology server what got want seconds
    local verdict=PASS
    [ "$4" = "$5" ] || { verdict=FAIL; failed=1; }
    printf 'CHECK %s %s %s got=%s want=%s %s %s\n' "$1" "$2" "$3" "$4" "$5" "$verdict" "$6"
}

# Counts the topology implies (see the header), from the .net text.
expected() {
    awk '
        /^(Switch|Hca|Ca|Rt)[ \t]/ {
            kind = $1; ports = $2
            if (kind == "Switch") { switches++; swports += ports + 1 }
            next
        }
        /^\[/ { links++; if (kind != "Switch") caports++ }
        END {
            e = switches + caports
            printf "nodes=%d paths=%d ports=%d links=%d switches=%d lftr=%d mcmr=1\n",
                e, e * e, swports + caports, links, switches, switches * (int(e / 64) + 1)
        }' "$1"
}

ca_name() { # nth CA (1-based) of a .net file
    awk -v n="$2" '/^(Hca|Ca)[ \t]/ { if (++i == n) { split($0, f, "\""); print f[2]; exit } }' "$1"
}

for net in "${nets[@]}"; do
    topo=$(basename "$net" .net)
    eval "$(expected "$net")"
    sm_host=$(ca_name "$net" 1)
    cl_host=$(ca_name "$net" 2)
    for server in "${servers[@]}"; do
        dir=$work/$topo-$server
        mkdir -p "$dir/cache"
        export IBSIM_SOCKNAME=sar$$$server${topo//[^a-z0-9]/}
        if [ "$server" = ibsim ]; then
            ibsim -s -n "$net" > "$dir/sim.log" 2>&1 &
        else
            "$ibsm" sim serve "$net" --socket-name "$IBSIM_SOCKNAME" > "$dir/sim.log" 2>&1 &
        fi
        pids+=($!)
        for _ in $(seq 200); do grep -q ready "$dir/sim.log" && break; sleep 0.1; done
        t0=$(now)
        (cd "$dir" && OSM_CACHE_DIR=$dir/cache OSM_TMP_DIR=$dir/cache SIM_HOST=$sm_host \
            LD_PRELOAD=$shim exec opensm -e -s 0 -d 2 -f "$dir/opensm.log" > "$dir/opensm.out" 2>&1) &
        pids+=($!)
        up=0
        for _ in $(seq 600); do grep -q "SUBNET UP" "$dir/opensm.log" 2>/dev/null && { up=1; break; }; sleep 0.1; done
        check "$topo" "$server" "opensm-subnet-up" "$up" 1 "$(since "$t0")"
        if [ $up = 1 ]; then
            cl() { (cd "$dir" && SIM_HOST=$cl_host LD_PRELOAD=$shim timeout 600 "$@"); }
            for q in "NodeRecord:$nodes:" "PathRecord:$paths:-p" "PortInfoRecord:$ports:PIR" \
                     "LinkRecord:$links:-x" "SwitchInfoRecord:$switches:SWIR" \
                     "LFT Record:$lftr:LFTR" "MCMemberRecord member:$mcmr:-m"; do
                name=${q%%:*}; rest=${q#*:}; want=${rest%%:*}; arg=${rest#*:}
                t0=$(now)
                cl saquery -t 20000 $arg > "$dir/saquery$arg.out" 2> "$dir/saquery$arg.err"
                got=$(grep -c "^$name dump:" "$dir/saquery$arg.out")
                check "$topo" "$server" "saquery:${arg:-NR}" "$got" "$want" "$(since "$t0")"
            done
            t0=$(now)
            cl osmtest -f c -i "$dir/inv.dat" -l "$dir/osmtest-c.log" > "$dir/osmtest-c.out" 2>&1
            rc=$?
            t=$(since "$t0")
            check "$topo" "$server" "osmtest-c" "$rc" 0 "$t"
            for d in NODE:$nodes PORT:$ports PATH:$paths LINK:$links; do
                check "$topo" "$server" "inventory-${d%%:*}" "$(grep -c "^DEFINE_${d%%:*}" "$dir/inv.dat" 2>/dev/null)" "${d#*:}" "$t"
            done
            t0=$(now)
            cl osmtest -f a -i "$dir/inv.dat" -l "$dir/osmtest-a.log" > "$dir/osmtest-a.out" 2>&1
            check "$topo" "$server" "osmtest-a" "$?" 0 "$(since "$t0")"
        fi
        cleanup
    done
done
exit $failed
