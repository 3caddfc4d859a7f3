#!/usr/bin/env bash
# The SA record sets of ibsm against stock OpenSM's (issue 13): on one simulated fabric, stock
# OpenSM is the SM and SA first, then `ibsm run` with OpenSM's guid2lid (so the LIDs match),
# and stock `saquery` (through libibsm_umad.so, which does RMPP like the kernel) dumps every
# record type ibsm serves from both. The dumps are compared as sets of records (order is not
# part of the answer) after the normalisations listed below, one line per record type:
#
#   DIFF <topology> <server> <record> opensm=<n> ibsm=<m> PASS|FAIL
#
# and the exit status is 1 if any record type differs. With --keep the work directory (both
# dumps, logs) is kept and its path printed.
#
# usage: tests/sa-diff.sh [--server ibsim|ibsm] [--keep] [--partitions FILE] [--qos]
#                        [--qos-policy FILE] [--routing ENGINE] [--torus-config FILE]
#                        [--guid-routing-order FILE] [--root-guid-file FILE] [--connect-roots]
#                        [--port-shifting] [--lmc N] [--ignore-guids FILE]
#                        [--hop-weights FILE] [--search-order FILE] [--ids-guid-file FILE]
#                        TOPOLOGY.net
#
#   --partitions FILE   both SMs read this partitions.conf (-P FILE): P_Key tables, the groups
#                       the partitions pre-create (MCG, MCMR: mtu=, rate=, sl=, scope=, Q_Key=
#                       of `ipoib` partitions) and PathRecords between partitions (PR)
#   --qos               both SMs with QoS on (-Q): a partition's sl= then counts (OpenSM
#                       overrides it to 0 without QoS), in its groups and its PathRecords
#   --qos-policy FILE   both SMs with QoS on and this qos-policy.conf (-Q -Y FILE): the QoS
#                       levels' SL, MTU, rate and packet lifetime in the PathRecords
#   --routing ENGINE    both SMs route with ENGINE (-R ENGINE): with lash, dfsssp or
#                       torus-2QoS the PathRecords carry the engine's path SLs
#   --torus-config FILE the torus-2QoS.conf both SMs read (--torus_config FILE)
#   --guid-routing-order FILE  the guid_routing_order_file both SMs read (-X FILE): the port
#                       GUIDs minhop, updn, dnup and dor route first (LFTR shows the tables)
#   --root-guid-file FILE  the root_guid_file both SMs read (-a FILE), for updn
#   --connect-roots     both SMs with connect_roots (-z): updn routes the roots' LIDs min-hop,
#                       ftree routes the switch LIDs upper switches lack through the last leaf,
#                       dnup routes what down/up cannot by min-hop
#   --port-shifting     both SMs with port_shifting (--port-shifting): minhop, updn and dnup
#                       start their port scan where the routes on the ports say
#   --lmc N             both SMs with LMC N (-l N): every end port gets 2^N LIDs
#   --ignore-guids FILE the port_prof_ignore_file both SMs read (-i FILE): routes out of the
#                       listed switch ports are not counted by the balancing
#   --hop-weights FILE  the hop_weights_file both SMs read (-w FILE): minhop's weighted hops
#   --search-order FILE the port_search_ordering_file both SMs read (-O FILE): the order in
#                       which minhop, updn, dnup and dor scan a switch's ports
#   --ids-guid-file FILE  the ids_guid_file both SMs read (-m FILE): the ids updn orders the
#                       switches of one rank by
#
# Environment: IBSM_UMAD_SHIM (default: built with cargo), IBSM_BIN (default: built with cargo).
#
# Record types: NR, PIR, SWIR, LFTR, MFTR, LR, SMIR, GIR, SL2VL, VLAR, CPI, MCMR (raw
# MCMemberRecords), MCG (`saquery -g`, multicast groups), MCM (`saquery -m`, members) and
# (trusted, `--smkey 1`) PKTR and MCMT (MCMemberRecords as a trusted requester sees them:
# one per member).
# And PR (`saquery -p`: every ordered pair of end ports) and ISSM (`saquery -s`: the
# PortInfoRecords of the ports whose CapabilityMask has IsSM, the SM's own port).
# PortInfoRecords and PathRecords are compared whole: ibsm programs PortInfo as OpenSM does
# (force_link_width / force_link_speed / force_link_speed_ext, HOQ lifetimes, VL stall
# counts…) and serves a Down port as OpenSM does, so both SMs leave the same PortInfos.
#
# Normalised (documented differences, each for a reason):
#   SMIR  act_count: the SMs' activity counters differ by nature.
#   CPI   cap_mask / cap_mask2: each SA advertises what it serves (both: UD multicast
#         unless disable_multicast; OpenSM also GetSet(Notice), extended speeds … that
#         ibsm's SA does not announce); compared: base/class version and resp_time_val.
#   PKTR  OpenSM reads every port's P_Key table, ibsm serves the tables it programmed
#         (the default table until partitions land) of CA ports and switch ports 0: OpenSM's
#         records are compared on the (LID, Port) keys ibsm serves, and ibsm must serve the
#         table of every end port (at least one per NodeRecord). The entries themselves are each SM's
#         partition policy (ibsm's partitions.conf programming): compared are the records'
#         (LID, Port, Block) keys.
#         OpenSM writes BlockNum in host byte order (osm_sa_pkey_record.c sets the record's
#         block_num without htons; it parses the request's with ntohs) and saquery prints it
#         raw; ibsm writes it big-endian as IBA says, so block 1 prints as 256: Block is
#         compared as the smaller of its value and its byte swap.
#   SWIR  MulticastFDBTop: saquery prints it only when the SA's ClassPortInfo announces
#         IsMulticastFDBTopSupported (OpenSM's use_mfttop).
#   PIR, ISSM  LocalPort: PortInfo.LocalPortNum is the port the reading SMP entered the
#         switch on (IBA 14.2.5.6), a property of the directed route each SM happened to
#         take, not of the port: with parallel links (net.2sw2path) OpenSM under load
#         sometimes reaches the second switch over the other link.
#   SL2VL, VLAR  compared by their keys ((LID, InPort, OutPort), (LID, Port, Block)): OpenSM
#         never reads a port's SL-to-VL or VLArbitration table (3.3.23 sends no Get of either;
#         osm_port_info_rcv.c reads only P_Key tables) and its SA serves the tables it last
#         wrote — all zero with qos off — while ibsm reads the tables it does not program
#         (`read_qos_tables`) and serves what the ports hold. Both serve every (in, out) pair
#         of a switch, one table per CA port (ports 0/0), and blocks 1-4 of every port.
set -uo pipefail

cd "$(dirname "$0")/.."
root=$PWD
server=ibsim
keep=0
net=
parts=
qos=0
policy=
engine=
tconf=
order=
roots=
connect=0
shifting=0
lmc=
ignore=
weights=
sorder=
ids=
while [ $# -gt 0 ]; do
    case "$1" in
        --server) server=${2:-}; shift 2 ;;
        --keep) keep=1; shift ;;
        --partitions) parts=${2:-}; shift 2 ;;
        --qos) qos=1; shift ;;
        --qos-policy) policy=${2:-}; qos=1; shift 2 ;;
        --routing) engine=${2:-}; shift 2 ;;
        --torus-config) tconf=${2:-}; shift 2 ;;
        --guid-routing-order) order=${2:-}; shift 2 ;;
        --root-guid-file) roots=${2:-}; shift 2 ;;
        --connect-roots) connect=1; shift ;;
        --port-shifting) shifting=1; shift ;;
        --lmc) lmc=$2; shift 2 ;;
        --ignore-guids) ignore=$2; shift 2 ;;
        --hop-weights) weights=$2; shift 2 ;;
        --search-order) sorder=$2; shift 2 ;;
        --ids-guid-file) ids=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/{/^set -uo/d;p}' "$0"; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) net=$1; shift ;;
    esac
done
[ -n "$net" ] || { echo "usage: $0 [--server ibsim|ibsm] [--keep] [--partitions FILE] [--qos] [--qos-policy FILE] [--routing ENGINE] [--torus-config FILE] [--guid-routing-order FILE] [--root-guid-file FILE] [--connect-roots] [--port-shifting] [--lmc N] [--ignore-guids FILE] [--hop-weights FILE] [--search-order FILE] [--ids-guid-file FILE] TOPOLOGY.net" >&2; exit 2; }
absolute() { # option file: the file's absolute path, or exit 2 if it cannot be read
    [ -r "$2" ] || { echo "$1: cannot read $2" >&2; exit 2; }
    echo "$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
}
sm_args=()
[ -z "$parts" ] || sm_args+=(-P "$(absolute --partitions "$parts")") || exit 2
[ $qos = 0 ] || sm_args+=(-Q)
[ -z "$policy" ] || sm_args+=(-Y "$(absolute --qos-policy "$policy")") || exit 2
[ -z "$engine" ] || sm_args+=(-R "$engine")
[ -z "$tconf" ] || sm_args+=(--torus_config "$(absolute --torus-config "$tconf")") || exit 2
[ -z "$order" ] || sm_args+=(-X "$(absolute --guid-routing-order "$order")") || exit 2
[ -z "$roots" ] || sm_args+=(-a "$(absolute --root-guid-file "$roots")") || exit 2
[ $connect = 0 ] || sm_args+=(-z)
[ $shifting = 0 ] || sm_args+=(--port-shifting)
[ -z "$lmc" ] || sm_args+=(-l "$lmc")
[ -z "$ignore" ] || sm_args+=(-i "$(absolute --ignore-guids "$ignore")") || exit 2
[ -z "$weights" ] || sm_args+=(-w "$(absolute --hop-weights "$weights")") || exit 2
[ -z "$sorder" ] || sm_args+=(-O "$(absolute --search-order "$sorder")") || exit 2
[ -z "$ids" ] || sm_args+=(-m "$(absolute --ids-guid-file "$ids")") || exit 2
case "$server" in ibsim|ibsm) ;; *) echo "--server: expected ibsim or ibsm" >&2; exit 2 ;; esac
for prog in opensm saquery; do
    command -v "$prog" >/dev/null || { echo "$prog not installed (apt-get install opensm infiniband-diags)" >&2; exit 2; }
done
[ "$server" = ibsm ] || command -v ibsim >/dev/null || { echo "ibsim not installed (apt-get install ibsim-utils)" >&2; exit 2; }
shim=${IBSM_UMAD_SHIM:-}
if [ -z "$shim" ]; then
    cargo build -q -p umad-shim || exit 2
    shim=$root/target/debug/libibsm_umad.so
fi
ibsm=${IBSM_BIN:-}
if [ -z "$ibsm" ]; then
    cargo build -q -p ibsm || exit 2
    ibsm=$root/target/debug/ibsm
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/sa-diff.XXXXXX")
pids=()
stop() { # stops the given PIDs and forgets them
    for p in "$@"; do kill "$p" 2>/dev/null; done
    for p in "$@"; do wait "$p" 2>/dev/null; done
}
cleanup() { stop "${pids[@]}"; pids=(); }
trap 'cleanup; [ $keep = 1 ] && echo "work directory: $work" || rm -rf "$work"' EXIT

ca_name() { awk -v n="$2" '/^(Hca|Ca)[ \t]/ { if (++i == n) { split($0, f, "\""); print f[2]; exit } }' "$1"; }
topo=$(basename "$net" .net)
sm_host=$(ca_name "$net" 1)
cl_host=$(ca_name "$net" 2)
export IBSIM_SOCKNAME=sad$$$server
if [ "$server" = ibsim ]; then
    ibsim -s -n "$net" > "$work/sim.log" 2>&1 &
else
    "$ibsm" sim serve "$net" --socket-name "$IBSIM_SOCKNAME" > "$work/sim.log" 2>&1 &
fi
pids+=($!)
for _ in $(seq 200); do grep -q ready "$work/sim.log" && break; sleep 0.1; done

queries=(NR PIR SWIR LFTR MFTR LR SMIR GIR SL2VL VLAR CPI PKTR MCMR MCG MCM MCMT PR ISSM)
dump() { # dir: every query from the client CA
    mkdir -p "$1"
    for q in "${queries[@]}"; do
        local args=("$q")
        case "$q" in
            PKTR) args=(--smkey 1 PKTR) ;;
            CPI) args=(-c) ;;
            MCG) args=(-g) ;;
            MCM) args=(-m) ;;
            MCMT) args=(--smkey 1 MCMR) ;;
            PR) args=(-p) ;;
            ISSM) args=(-s) ;;
        esac
        (cd "$work" && SIM_HOST=$cl_host LD_PRELOAD=$shim timeout 60 saquery -t 20000 "${args[@]}") \
            > "$1/$q.out" 2> "$1/$q.err"
    done
}
wait_for() { # file pattern seconds
    for _ in $(seq $(( $3 * 10 ))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    return 1
}

mkdir -p "$work/osm-cache" "$work/ibsm-cache"
(cd "$work" && OSM_CACHE_DIR=$work/osm-cache OSM_TMP_DIR=$work/osm-cache SIM_HOST=$sm_host \
    LD_PRELOAD=$shim exec opensm -e -s 0 -d 2 "${sm_args[@]}" -f "$work/opensm.log" > "$work/opensm.out" 2>&1) &
osm=$!
pids+=($osm)
wait_for "$work/opensm.log" "SUBNET UP" 60 || { echo "OpenSM: no SUBNET UP" >&2; exit 1; }
dump "$work/opensm"
stop "$osm"
cp "$work/osm-cache/guid2lid" "$work/ibsm-cache/guid2lid" 2>/dev/null
(cd "$work" && OSM_CACHE_DIR=$work/ibsm-cache SIM_HOST=$sm_host LD_PRELOAD=$shim \
    exec "$ibsm" run "${sm_args[@]}" -f "$work/ibsm.log" > "$work/ibsm.out" 2>&1) &
pids+=($!)
wait_for "$work/ibsm.log" "SUBNET UP" 60 || { echo "ibsm: no SUBNET UP" >&2; exit 1; }
# The SL-to-VL / VLArbitration tables ibsm does not program are read right after SUBNET UP.
wait_for "$work/ibsm.log" "QoS tables read" 60 || echo "ibsm: no 'QoS tables read' line" >&2
dump "$work/ibsm"
cleanup

# One record per line, fields joined, normalised; sorted.
records() { # file query
    awk -v q="$2" '
        function flush() {
            if (rec == "") return
            print rec; rec = ""
        }
        / dump:$/ || /^SMInfoRecord/ { flush(); rec = "#"; next }
        {
            line = $0; gsub(/^[ \t]+/, "", line)
            if (line == "") next
            split(line, kv, /\.\.+/); key = kv[1]; val = kv[2]
            if (q == "SMIR" && key ~ /act_count|ActCount/) next
            if (q == "CPI" && key ~ /cap_mask|CapMask|Capability/) next
            if (q == "SWIR" && key ~ /^MulticastFDBTop/) next
            if ((q == "PIR" || q == "ISSM") && key ~ /^LocalPort/) next
            if (q == "PKTR" && key == "Block") {
                v = val + 0; w = (v % 256) * 256 + int(v / 256); if (w < v) v = w; val = v
            }
            if (rec == "") rec = "#"
            rec = rec "|" key "=" val
        }
        END { flush() }' "$1" | sort
}
failed=0
for q in "${queries[@]}"; do
    a=$(records "$work/opensm/$q.out" "$q")
    b=$(records "$work/ibsm/$q.out" "$q")
    na=$(printf '%s' "$a" | grep -c .)
    nb=$(printf '%s' "$b" | grep -c .)
    case "$q" in
        SL2VL|VLAR) # keys only (see the header)
              a=$(printf '%s\n' "$a" | sed 's/|\(SL\|VL\) *:.*//')
              b=$(printf '%s\n' "$b" | sed 's/|\(SL\|VL\) *:.*//') ;;
        PKTR) # OpenSM's records on ibsm's keys; ibsm: one per NodeRecord.
              keys=$(printf '%s\n' "$b" | grep -o '^#|LID=[0-9]*|Port=[0-9]*|' | sort -u)
              a=$(printf '%s\n' "$a" | grep -F -f <(printf '%s\n' "$keys") | sed 's/|PKey Table:.*//')
              b=$(printf '%s\n' "$b" | sed 's/|PKey Table:.*//')
              nr=$(grep -c "^NodeRecord dump" "$work/ibsm/NR.out")
              nk=$(printf '%s' "$keys" | grep -c .)
              [ "$nk" -ge "$nr" ] || b="$b (ibsm: tables of $nk ports for $nr end ports)" ;;
    esac
    verdict=PASS
    # Empty may be right only where no port joined a group (MFTR: no group has two member
    # ports; MCMT: no member at all).
    case "$q" in MFTR|MCMT) empty_ok=1 ;; *) empty_ok=0 ;; esac
    if [ "$a" != "$b" ] || [ "$na" = 0 -a $empty_ok = 0 ]; then
        verdict=FAIL; failed=1
        diff <(printf '%s\n' "$a") <(printf '%s\n' "$b") | head -20 > "$work/$q.diff"
    fi
    printf 'DIFF %s %s %s opensm=%s ibsm=%s %s\n' "$topo" "$server" "$q" "$na" "$nb" "$verdict"
    [ $verdict = PASS ] || sed 's/^/    /' "$work/$q.diff"
done
exit $failed
