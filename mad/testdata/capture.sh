#!/bin/bash
# capture.sh — regenerates the captured SMP vectors in mad/testdata/ from a simulated fabric.
#
# Tools: Debian ibsim-utils 0.10 (ibsim + umad2sim), opensm, infiniband-diags (smpquery, ibroute,
# sminfo). Every run uses a private IBSIM_SOCKNAME and a temporary directory, and stops exactly the
# processes it started (by PID).
#
# For each query NAME it writes:
#   NAME.txt   the tool's stdout, first line "$ <command>" (the field listing our tests compare to)
#   NAME.mads  every MAD libibmad dumped at debug level 3 (-ddd): "snd <hex>" for requests (the
#              64-byte umad header stripped) and "rcv <hex>" for responses, 256 bytes each;
#              saquery's own "SA Request:" / "SA Response:" dumps (stdout) are read the same way
# and fuzz seeds ../fuzz/corpus/parse_mad/NAME-<n>.bin (one per MAD).
#
# Usage: mad/testdata/capture.sh [smp|gmp|all]   (from anywhere; writes next to this script)
#   smp: the SMP queries; gmp: the PerfMgt (perfquery) and SubnAdm (saquery) queries; all (the
#   default): both.
#
# Re-running changes the TIDs, SMInfo's ActCount and the stale bytes libibmad leaves in the
# receive buffer past HopCount; the static BYTES vectors in mad/src/attr/*.rs tests are checked
# against these files (bytes_are_the_capture), so update them together.
set -u
what=${1:-all}
case $what in smp|gmp|all) ;; *) echo "usage: $0 [smp|gmp|all]" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
corpus=$here/../fuzz/corpus/parse_mad
net=${NET:-/usr/share/doc/ibsim-utils/net-examples/net.2sw2path}
SO=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
for c in ibsim opensm smpquery ibroute sminfo perfquery saquery xxd; do
  command -v $c >/dev/null || { echo "missing $c" >&2; exit 2; }
done
work=$(mktemp -d)
cd "$work" || exit 2
export IBSIM_SOCKNAME=cap$$_$RANDOM
ibsim -s -n "$net" >ibsim.out 2>&1 &
ibsim_pid=$!
osm_pid=
cleanup() {
  [ -n "$osm_pid" ] && kill "$osm_pid" 2>/dev/null && wait "$osm_pid" 2>/dev/null
  kill "$ibsim_pid" 2>/dev/null
  wait "$ibsim_pid" 2>/dev/null
}
trap cleanup EXIT
for _ in $(seq 50); do grep -q ready ibsim.out 2>/dev/null && break; sleep 0.1; done
sleep 0.5

# One OpenSM sweep assigns LIDs (1 = Switch1, 2 = Hca1, 3 = Switch2, 4 = Hca2 on net.2sw2path)
# and programs the LFTs, so LID-routed queries and ibroute work.
OSM_CACHE_DIR=$work OSM_TMP_DIR=$work LD_PRELOAD=$SO opensm -o -f "$work/osm.log" >osm.out 2>&1
grep -q 'SUBNET UP' osm.log || { echo "opensm did not bring the subnet up" >&2; exit 1; }

# q NAME TOOL ARGS... : run "TOOL -ddd ARGS..." under the shim; split stdout / hex dumps.
q() {
  local name=$1 tool=$2
  shift 2
  {
    echo "\$ $tool $*"
    LD_PRELOAD=$SO $tool -ddd "$@" 2>"$work/$name.err"
  } >"$here/$name.txt"
  {
    echo "# $tool $*   (ibsim 0.10, $(basename "$net"), after opensm -o)"
    awk '
      /^send buf$/ { mode = "snd"; skip = 4; n = 0; hex = ""; next }
      /^rcv buf$/  { mode = "rcv"; skip = 0; n = 0; hex = ""; next }
      /^SA Request:$/  { mode = "snd"; skip = 0; n = 0; hex = ""; next }
      /^SA Response:$/ { mode = "rcv"; skip = 0; n = 0; hex = ""; next }
      mode != "" && NF == 8 && /^[0-9a-f ]+$/ {
        n++; line = $0; gsub(/ /, "", line)
        if (n > skip) hex = hex line
        if (n == skip + 16) { print mode, hex; mode = "" }
        next
      }
      { mode = "" }
    ' "$work/$name.err" "$here/$name.txt"
  } >"$here/$name.mads"
  local i=0
  mkdir -p "$corpus"
  grep -v '^#' "$here/$name.mads" | while read -r _ hex; do
    echo "$hex" | xxd -r -p >"$corpus/$name-$i.bin"
    i=$((i + 1))
  done
}

if [ "$what" != gmp ]; then
q ni_sw1_dr0        smpquery -K -D nodeinfo 0
q ni_hca1_dr1       smpquery -K -D nodeinfo 0,1
q ni_hca2_dr3       smpquery -K -D nodeinfo 0,3,1
q ni_sw2_lid3       smpquery -K nodeinfo 3
q nd_sw1_dr0        smpquery -K -D nodedesc 0
q nd_hca2_dr3       smpquery -K -D nodedesc 0,3,1
q si_sw1_dr0        smpquery -K -D switchinfo 0
q si_sw2_lid3       smpquery -K switchinfo 3
q pi_sw1_p0_dr0     smpquery -K -D portinfo 0 0
q pi_sw1_p3_dr0     smpquery -K -D portinfo 0 3
q pi_hca1_p1_lid2   smpquery -K portinfo 2 1
q pi_hca2_p1_dr3    smpquery -K -D portinfo 0,3,1 1
q pkey_hca1_dr1     smpquery -K -D pkeys 0,1 1
q sl2vl_hca1_dr1    smpquery -K -D sl2vl 0,1 1
q vlarb_hca1_dr1    smpquery -K -D vlarb 0,1 1
q guid_hca1_dr1     smpquery -K -D guidinfo 0,1
q lft_sw1_lid1      ibroute 1
q lft_sw2_dr3       ibroute -D 0,3
q mft_sw1_lid1      ibroute -M 1
fi

if [ "$what" != smp ]; then
# PerfMgt, answered by ibsim's own PMA: ClassPortInfo + PortCounters of Hca1 port 1 (LID 2),
# PortCountersExtended, all ports of Switch1 (PortSelect 255), a bad PortSelect, a reset.
q pma_pc_hca1_p1     perfquery 2 1
q pma_pcx_hca1_p1    perfquery -x 2 1
q pma_pc_sw1_all     perfquery -a 1
q pma_pc_hca1_p9     perfquery 2 9
q pma_reset_hca1_p1  perfquery -R 2 1
fi

# SMInfo needs a live SM: run OpenSM in the background for one query.
(OSM_CACHE_DIR=$work OSM_TMP_DIR=$work LD_PRELOAD=$SO exec opensm -f "$work/osm2.log" >osm2.out 2>&1) &
osm_pid=$!
for _ in $(seq 100); do grep -q 'SUBNET UP' osm2.log 2>/dev/null && break; sleep 0.1; done
[ "$what" != gmp ] && q sminfo_lid1       sminfo
# SubnAdm, answered by OpenSM's SA: ClassPortInfo and a NodeRecord table (first MAD only: the
# shim does no RMPP).
if [ "$what" != smp ]; then
q sa_cpi             saquery -c
q sa_nr_gettable     saquery NR
fi
kill "$osm_pid" 2>/dev/null
wait "$osm_pid" 2>/dev/null
osm_pid=
echo "captured into $here"
