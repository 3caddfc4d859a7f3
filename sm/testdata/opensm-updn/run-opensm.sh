#!/bin/bash
# Regenerates the OpenSM side of the updn comparison (sm/tests/updn_opensm.rs).
# 1. topologies: UPDN_WRITE_NET=1 cargo test -p sm --test updn_opensm -- --ignored write_topologies
# 2. this script (needs opensm, ibsim-utils, infiniband-diags): for every fabric directory,
#    OpenSM 3.3.23 on ibsim with -R updn (auto roots), -R updn -a roots.txt (where our updn's
#    auto-detection fell back to a minimum-eccentricity root), and -R minhop; keeps dump_fts's
#    read-back of the tables and OpenSM's log.
set -u
here=$(cd "$(dirname "$0")" && pwd)
tool=${OPENSM_ON_IBSIM:-/work/shared/tools/opensm-on-ibsim.sh}
for d in "$here"/*/; do
  d=${d%/}; n=$(basename "$d")
  tmp=$(mktemp -d)
  run() { # tag engine [opts]
    local tag=$1 eng=$2; shift 2
    "$tool" "$d/topo.net" "$eng" "$tmp/$tag" "$@" >/dev/null 2>&1
    cp "$tmp/$tag/fts.txt" "$d/$tag-fts.txt"
    grep -h 'tables configured\|no root nodes\|cannot build\|ERR ' "$tmp/$tag/osm.log" | sed 's/^.* -> //' >"$d/$tag-osm.log"
  }
  run updn updn
  [ -f "$d/roots.txt" ] && run updn-roots updn -a "$d/roots.txt"
  run minhop minhop
  rm -rf "$tmp"
  echo "$n: $(cat "$d/updn-osm.log" | tr '\n' ' ')"
done
