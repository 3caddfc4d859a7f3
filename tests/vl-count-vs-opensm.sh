#!/usr/bin/env bash
# The virtual lanes lash and dfsssp need, ibsm's engine against OpenSM's, on generated fabrics
# (issue 14: "no more VLs than OpenSM's same engine uses on the same fabric").
#
#   tests/vl-count-vs-opensm.sh [SPEC[@FAULT]...]
#
# A SPEC may carry a fault, SPEC@link:NAME:PORT or SPEC@switch:NAME (torus:5,5@switch:sw-2-2):
# both SMs then get the fabric with that cable pulled, or that switch and the CAs cabled only
# to it removed (`ibsm topo --fault`, the bench's ROUTE_VL_FAULT).
#
# Without SPECs: FABRICS (default 40) random irregular graphs, seeds FIRST (default 1) onward,
# seed s being random:S,S,E,s,ports=P with S = 8 + 7s mod 33 switches, E = 2 + 13s mod 2S extra
# links and P = 8 + s mod 9 ports (so 8-40 switches, as many dual-port CAs).
#
# For each SPEC and engine (ENGINES, default "lash dfsssp"):
# - OpenSM 3.3.23: tests/opensm-route-time.sh SPEC ENGINE with IBSM=0 (stock `opensm -o -Q` on
#   a fresh ibsim of the fabric); the count is its log's last "Lanes needed: N" (lash) or
#   "Virtual Lanes needed: N" (dfsssp);
# - ibsm: the route_vl bench, one run of the engine on the same generated fabric (VLCap VL0-7,
#   -Q, max_op_vls 5, as OpenSM sees ibsim's ports); the same log line.
# LMC=N gives every end port 2^N LIDs in both (OpenSM's -l N, the bench's ROUTE_VL_LMC).
# Prints one line per (fabric, engine): both counts, each with the ERR code if that SM's engine
# refused the fabric, and "fewer", "same" or "MORE"; then the totals. Exits 1 if ibsm needed
# more on any pair, 2 if a tool is missing.
# Needs Debian's opensm, ibsim-utils and time, and cargo.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 2
engines=${ENGINES:-lash dfsssp}
case ${LMC:-0} in
[0-7]) ;;
*) echo "vl-count-vs-opensm: LMC=$LMC: not an LMC (0..7)" >&2; exit 2 ;;
esac
specs=("$@")
if [ ${#specs[@]} -eq 0 ]; then
    first=${FIRST:-1}
    for seed in $(seq "$first" $((first + ${FABRICS:-40} - 1))); do
        s=$((8 + seed * 7 % 33))
        specs+=("random:$s,$s,$((2 + seed * 13 % (2 * s))),$seed,ports=$((8 + seed % 9))")
    done
fi
bench=$(cargo bench -p sm --bench route_vl --no-run 2>&1 |
    sed -n 's/.*Executable benches\/route_vl.rs (\(.*\))/\1/p')
cargo build --quiet --release -p ibsm || exit 2
if [ -z "$bench" ] || [ ! -x "$bench" ]; then
    echo "vl-count-vs-opensm: could not build the route_vl bench" >&2
    exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/vl-count.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
# The count in an engine's log text, and its first ERR code.
count() {
    case $1 in
    lash) grep -o 'Lanes needed: [0-9]*' <<<"$2" | tail -1 | grep -o '[0-9]*$' ;;
    *) grep -o 'Virtual Lanes needed: [0-9]*' <<<"$2" | tail -1 | grep -o '[0-9]*$' ;;
    esac
}
err() { grep -o 'ERR [0-9A-F]*' <<<"$1" | head -1; }
declare -A fewer same more
status=0
for item in "${specs[@]}"; do
    spec=${item%%@*} fault=
    [ "$spec" = "$item" ] || fault=${item#*@}
    for engine in $engines; do
        out=$work/$engine
        rm -rf "$out"
        if ! FAULT=$fault IBSM=0 IBSM_BIN="$repo/target/release/ibsm" tests/opensm-route-time.sh \
            "$spec" "$engine" "$out" >"$work/route-time.txt" 2>&1; then
            if grep -q '^missing' "$work/route-time.txt"; then
                cat "$work/route-time.txt" >&2
                exit 2
            fi
        fi
        theirs=$(cat "$out/osm.log" 2>/dev/null)
        ours=$(ROUTE_VL_FAULT=$fault ROUTE_VL_LMC=${LMC:-0} "$bench" "$engine" "$spec" 4 1 2>&1)
        o=$(count "$engine" "$theirs") m=$(count "$engine" "$ours")
        oe=$(err "$theirs") me=$(err "$ours")
        verdict=?
        if [ -n "$o" ] && [ -n "$m" ]; then
            if [ "$m" -lt "$o" ]; then
                verdict=fewer fewer[$engine]=$((${fewer[$engine]:-0} + 1))
            elif [ "$m" -eq "$o" ]; then
                verdict=same same[$engine]=$((${same[$engine]:-0} + 1))
            else
                verdict=MORE more[$engine]=$((${more[$engine]:-0} + 1)) status=1
            fi
        fi
        why=
        if [ "$verdict" = "?" ]; then
            # No count from one SM: the first complaint (a bad spec or fault, a refused LMC).
            why=$( { grep -m1 -i -e 'bad' -e 'error' -e 'not an' "$work/route-time.txt"; \
                grep -m1 -v -e '^topology' -e '^fault' <<<"$ours"; } 2>/dev/null | head -1)
        fi
        echo "$item $engine: OpenSM ${o:-?}${oe:+ ($oe)}, ibsm ${m:-?}${me:+ ($me)}: $verdict${why:+ ($why)}"
    done
done
for engine in $engines; do
    echo "$engine: ibsm needs fewer VLs on ${fewer[$engine]:-0}, the same on ${same[$engine]:-0}, more on ${more[$engine]:-0}"
done
exit $status
