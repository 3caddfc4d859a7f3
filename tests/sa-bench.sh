#!/usr/bin/env bash
# SA benchmarks of ibsm against stock OpenSM on one simulated fabric (issue 13), both SAs
# queried by stock clients through libibsm_umad.so (the user_mad shim: RMPP and timeouts as the
# kernel does them), the SM on the fabric's first CA, the clients on its second:
#
#   get-pr     `osmtest -f f -s4`: 100,000 single PathRecord Gets (SubnAdmGet, one at a time,
#              each waiting for its answer) from the client CA to the SM's LID; elapsed and
#              Gets/s.
#   table-pr   `saquery -p`: one PathRecord GetTable of every ordered pair of end ports
#              (RMPP answer); elapsed and records/s.
#   resweep    `osmtest -f f -s4` again, and while it runs a heavy re-sweep every 2 s (OpenSM:
#              SIGHUP; ibsm: `ibsm ctl sweep heavy`); osmtest prints its running total every
#              ~5,000 answered Gets, and the longest 5,000-Get interval is compared with the
#              median: a stalled SA shows as a spike.
#
# OpenSM runs first (until SUBNET UP, `-s 0`: no periodic sweeps of its own), then ibsm with
# OpenSM's guid2lid, so both serve the same LIDs (also `-s 0`, and once it has read the QoS
# tables it reads after SUBNET UP). Last, the floor of the path: `sa_echo` (umad's
# example) on the SM's port answers every SA request at once with the request turned into its
# response — no SA behind it — and `osmtest -f f -s4` runs against it (get-pr only): what the
# client, the shim and the simulator cost per query whatever SM answers. One line per figure:
#
#   BENCH <topology> <server> <sm> <what> <value> <unit> [detail]
#
# usage: tests/sa-bench.sh [--server ibsim|ibsm] [--keep] [--only opensm|ibsm|echo]
#                          [--tests get-pr,table-pr,resweep] [--runs N] [TOPOLOGY]
#
#   --tests    which of the figures to measure (default all three; echo measures get-pr only)
#   --runs N   rounds of get-pr (default 1): after round 1 (every figure of OpenSM, then of
#              ibsm, then the floor), rounds 2..N run get-pr against OpenSM, ibsm and the
#              floor one after the other, each SM started afresh, so that the machine's load
#              changing between rounds hits all three alike; a last line gives each one's
#              median microseconds per Get over the rounds
#
#   TOPOLOGY   a .net file or a generator spec (default fat-tree:3,16: 1,024 CAs, 320
#              switches — more than stock ibsim's 256 switches: use --server ibsm)
#
# Environment: IBSM_UMAD_SHIM, IBSM_BIN (default: built with `cargo build --release`; pass the
# debug builds to measure those, and say so).
set -uo pipefail

cd "$(dirname "$0")/.."
root=$PWD
server=ibsim
keep=0
only=
tests=get-pr,table-pr,resweep
runs=1
topo=fat-tree:3,16
while [ $# -gt 0 ]; do
    case "$1" in
        --server) server=${2:-}; shift 2 ;;
        --keep) keep=1; shift ;;
        --only) only=${2:-}; shift 2 ;;
        --tests) tests=${2:-}; shift 2 ;;
        --runs) runs=${2:-}; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/{/^set -uo/d;p}' "$0"; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) topo=$1; shift ;;
    esac
done
case "$server" in ibsim|ibsm) ;; *) echo "--server: expected ibsim or ibsm" >&2; exit 2 ;; esac
case "$only" in ''|opensm|ibsm|echo) ;; *) echo "--only: expected opensm, ibsm or echo" >&2; exit 2 ;; esac
case "$runs" in ''|*[!0-9]*|0) echo "--runs: expected a positive number" >&2; exit 2 ;; esac
for t in ${tests//,/ }; do
    case "$t" in get-pr|table-pr|resweep) ;; *) echo "--tests: unknown test $t (get-pr, table-pr, resweep)" >&2; exit 2 ;; esac
done
want() { case ",$tests," in *",$1,"*) return 0 ;; esac; return 1; }
for prog in opensm osmtest saquery; do
    command -v "$prog" >/dev/null || { echo "$prog not installed (apt-get install opensm infiniband-diags)" >&2; exit 2; }
done
[ "$server" = ibsm ] || command -v ibsim >/dev/null || { echo "ibsim not installed (apt-get install ibsim-utils)" >&2; exit 2; }
shim=${IBSM_UMAD_SHIM:-}
ibsm=${IBSM_BIN:-}
echo_bin=${IBSM_SA_ECHO:-}
if [ -z "$shim" ] || [ -z "$ibsm" ] || [ -z "$echo_bin" ]; then
    cargo build -q --release -p umad-shim -p ibsm || exit 2
    cargo build -q --release -p umad --example sa_echo || exit 2
    target=$(cargo metadata --format-version 1 --no-deps | sed 's/.*"target_directory":"\([^"]*\)".*/\1/')
    shim=${shim:-$target/release/libibsm_umad.so}
    ibsm=${ibsm:-$target/release/ibsm}
    echo_bin=${echo_bin:-$target/release/examples/sa_echo}
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/sa-bench.XXXXXX")
pids=()
stop() { for p in "$@"; do kill "$p" 2>/dev/null; done; for p in "$@"; do wait "$p" 2>/dev/null; done; }
cleanup() { stop "${pids[@]}"; pids=(); }
trap 'cleanup; [ $keep = 1 ] && echo "work directory: $work" || rm -rf "$work"' EXIT

if [ -f "$topo" ]; then
    net=$topo
    name=$(basename "$topo" .net)
else
    net=$work/fabric.net
    "$ibsm" topo "$topo" --write-net "$net" > /dev/null || exit 2
    name=$topo
fi
ca_name() { awk -v n="$2" '/^(Hca|Ca)[ \t]/ { if (++i == n) { split($0, f, "\""); print f[2]; exit } }' "$1"; }
sm_host=$(ca_name "$net" 1)
cl_host=$(ca_name "$net" 2)
export IBSIM_SOCKNAME=sab$$
if [ "$server" = ibsim ]; then
    ibsim -s -n "$net" > "$work/sim.log" 2>&1 &
else
    "$ibsm" sim serve "$net" --socket-name "$IBSIM_SOCKNAME" > "$work/sim.log" 2>&1 &
fi
srv=$!
pids+=($srv)
for _ in $(seq 600); do grep -q ready "$work/sim.log" && break; sleep 0.1; done
grep -q ready "$work/sim.log" || { echo "the simulator did not start:" >&2; cat "$work/sim.log" >&2; exit 1; }

wait_for() { # file pattern seconds
    for _ in $(seq $(( $3 * 10 ))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    return 1
}
client() { (cd "$work" && SIM_HOST=$cl_host LD_PRELOAD=$shim "$@"); }
now() { date +%s.%N; }
report() { printf 'BENCH %s %s %s %s\n' "$name" "$server" "$1" "$2" | tee -a "$work/bench.out"; }

# The 5,000-Get intervals of an osmtest -s4 log: "max median count" in seconds.
intervals() {
    awk '/path_rec queries took/ { split($(NF-1), t, ":"); s = t[1] + t[2] / 1e6; if (n++) print s - last; last = s }' "$1" |
        sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.3f %.3f %d\n", v[NR], v[int((NR + 1) / 2)], NR; else print "0 0 0" }'
}

# CPU time (user + system, all threads) of a live process, in clock ticks.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
hz=$(getconf CLK_TCK)

getpr() { # sm run sm-pid|file:FILE (the SM's "user system" seconds, written when it exits)
    local sm=$1 i=$2 pid=$3 t0 t1 rc n c0 c1 s0 s1
    c0=$(ticks "$pid"); s0=$(ticks "$srv")
    t0=$(now)
    client timeout 1800 /usr/bin/time -f '%U %S' -o "$work/$sm-getpr$i.time" \
        osmtest -f f -s4 -t 2000 > "$work/$sm-getpr$i.out" 2>&1; rc=$?
    t1=$(now)
    c1=$(ticks "$pid"); s1=$(ticks "$srv")
    case "$pid" in file:*)
        wait_for "${pid#file:}" . 10
        c0=0; c1=$(awk -v hz="$hz" '{ print ($1 + $2) * hz }' "${pid#file:}" 2>/dev/null) ;;
    esac
    n=$(awk '/path_rec queries took/ { n = $3 } END { print n + 0 }' "$work/$sm-getpr$i.out")
    # Where the time goes: CPU microseconds per Get of the SM (or responder), of the
    # simulator and of osmtest (the client, with libibsm_umad.so in it).
    local per="1000000 / ($n + ($n == 0))"
    local cl
    cl=$(awk '{ print $1 + $2 }' "$work/$sm-getpr$i.time" 2>/dev/null)
    report "$sm" "$(printf 'get-pr %.2f s rc=%d queries=%d rate=%.0f/s per-query=%.1fus load=%s cpu-us/query: sm=%.1f sim=%.1f osmtest=%.1f' \
        "$(echo "$t1 - $t0" | bc)" "$rc" "$n" "$(echo "$n / ($t1 - $t0)" | bc -l)" \
        "$(echo "($t1 - $t0) * $per" | bc -l)" "$(cut -d' ' -f1 /proc/loadavg)" \
        "$(echo "($c1 - $c0) / $hz * $per" | bc -l)" "$(echo "($s1 - $s0) / $hz * $per" | bc -l)" \
        "$(echo "${cl:-0} * $per" | bc -l)")"
}

others() { # sm resweep-command...: table-pr and resweep
    local sm=$1; shift
    local t0 t1 rc n
    if want table-pr; then
        t0=$(now)
        client timeout 1800 saquery -p -t 60000 > "$work/$sm-pr.out" 2> "$work/$sm-pr.err"; rc=$?
        t1=$(now)
        n=$(grep -c '^PathRecord dump:' "$work/$sm-pr.out")
        report "$sm" "$(printf 'table-pr %.2f s rc=%d records=%d rate=%.0f/s' "$(echo "$t1 - $t0" | bc)" "$rc" "$n" "$(echo "$n / ($t1 - $t0)" | bc -l)")"
    fi
    want resweep || return 0
    client timeout 1800 osmtest -f f -s4 -t 2000 > "$work/$sm-resweep.out" 2>&1 &
    local o=$!
    local sweeps=0
    while kill -0 "$o" 2>/dev/null; do
        sleep 2
        kill -0 "$o" 2>/dev/null || break
        "$@" > /dev/null 2>&1 && sweeps=$((sweeps + 1))
    done
    wait "$o"; rc=$?
    read -r max med cnt < <(intervals "$work/$sm-resweep.out")
    local base="no get-pr run to compare"
    if [ -f "$work/$sm-getpr1.out" ]; then
        read -r qmax qmed _ < <(intervals "$work/$sm-getpr1.out")
        base="no sweeps: max=${qmax}s median=${qmed}s"
    fi
    report "$sm" "resweep max=${max}s median=${med}s intervals=$cnt sweeps=$sweeps rc=$rc ($base) load=$(cut -d' ' -f1 /proc/loadavg)"
}

runs_of() { case "$only" in ''|"$1") return 0 ;; esac; return 1; }
start_opensm() {
    rm -f "$work/opensm.log"
    (cd "$work" && OSM_CACHE_DIR=$work/osm-cache OSM_TMP_DIR=$work/osm-cache SIM_HOST=$sm_host \
        LD_PRELOAD=$shim exec opensm -e -s 0 -d 2 -f "$work/opensm.log" > "$work/opensm.out" 2>&1) &
    osm=$!
    pids+=($osm)
    wait_for "$work/opensm.log" "SUBNET UP" 600 || { echo "OpenSM: no SUBNET UP" >&2; exit 1; }
}
start_ibsm() {
    rm -f "$work/ibsm.log"
    (cd "$work" && OSM_CACHE_DIR=$work/ibsm-cache SIM_HOST=$sm_host LD_PRELOAD=$shim \
        exec "$ibsm" run -s 0 --ctl-socket "$work/ctl.sock" -f "$work/ibsm.log" > "$work/ibsm.out" 2>&1) &
    ism=$!
    pids+=($ism)
    wait_for "$work/ibsm.log" "SUBNET UP" 600 || { echo "ibsm: no SUBNET UP" >&2; exit 1; }
    # After SUBNET UP ibsm reads the SL-to-VL and VLArbitration tables (a few seconds at k16):
    # the queries start once it is idle, as OpenSM is at SUBNET UP.
    wait_for "$work/ibsm.log" "QoS tables read" 60
}
echo_round() { # run: the responder answers one osmtest (ClassPortInfo + 100,000 Gets), exits
    # The fabric stays as the SMs programmed it; the responder takes the SM's port and leaves
    # it (IsSM cleared) when it has answered them all.
    rm -f "$work/echo$1.time"
    (cd "$work" && SIM_HOST=$sm_host LD_PRELOAD=$shim exec /usr/bin/time -f '%U %S' -o "$work/echo$1.time" \
        "$echo_bin" --count 100001 > "$work/echo.out" 2>&1) &
    local e=$!
    pids+=($e)
    wait_for "$work/echo.out" "answering" 60 || { echo "sa_echo did not start:" >&2; cat "$work/echo.out" >&2; exit 1; }
    getpr echo "$1" "file:$work/echo$1.time"
    stop "$e"
}

# Round 1: every figure of OpenSM, then of ibsm, then the floor; rounds 2..N (--runs): get-pr
# again, the three one after the other, so that a change of the machine's load between rounds
# hits all three alike.
mkdir -p "$work/osm-cache" "$work/ibsm-cache"
start_opensm
if runs_of opensm; then
    ! want get-pr || getpr opensm 1 "$osm"
    others opensm kill -HUP "$osm"
fi
stop "$osm"
cp "$work/osm-cache/guid2lid" "$work/ibsm-cache/guid2lid" 2>/dev/null
if runs_of ibsm; then
    start_ibsm
    ! want get-pr || getpr ibsm 1 "$ism"
    others ibsm "$ibsm" ctl --socket "$work/ctl.sock" sweep heavy
    stop "$ism"
fi
! want get-pr || ! runs_of echo || echo_round 1
if want get-pr; then
    for i in $(seq 2 "$runs"); do
        if runs_of opensm; then start_opensm; getpr opensm "$i" "$osm"; stop "$osm"; fi
        if runs_of ibsm; then start_ibsm; getpr ibsm "$i" "$ism"; stop "$ism"; fi
        ! runs_of echo || echo_round "$i"
    done
    # Medians of the rounds, microseconds per Get.
    med() { grep -h "^BENCH .* $1 get-pr " "$work/bench.out" | sed 's/.*per-query=\([0-9.]*\)us.*/\1/' | sort -g |
        awk '{ v[NR] = $1 } END { if (NR) printf "%.1f", v[int((NR + 1) / 2)]; else print "-" }'; }
    report summary "get-pr median per-query: opensm=$(med opensm)us ibsm=$(med ibsm)us echo=$(med echo)us ($runs rounds)"
fi
