#!/usr/bin/env bash
# Run the VFIO kernel tests (hwtest/src/cases.rs) in a QEMU guest with an emulated Intel IOMMU.
#
# Builds an initramfs from what is installed — Debian's kernel and its vfio modules
# (linux-image-amd64), busybox (busybox-static), the test binary and the shared libraries it
# needs — boots it under TCG with QEMU's edu and e1000e devices behind intel-iommu, collects
# the guest's serial console and checks that every planned test case printed a PASS line.
# Nothing is downloaded.
#
# Usage: hwtest/guest/run.sh [--binary PATH] [--break dma-iova] [--timeout SECS]
#                            [--log FILE] [--kernel VERSION]
#   --binary   the vfio-kernel-tests binary (default: cargo build -p hwtest, debug profile)
#   --break    pass IBSM_HWTEST_BREAK to the guest: dma-iova gives edu wrong IOVAs, so the DMA
#              cases must FAIL (shows the tests detect a broken mapping)
#   --timeout  seconds for the whole guest run (default 600; TCG on a busy 2-core host is slow)
#   --log      also copy the guest's serial output here
#   --kernel   kernel version under /boot and /lib/modules (default: the newest with vfio-pci)
# Exit status: 0 every case passed; 1 a case failed or is missing; 2 bad usage;
#              77 a prerequisite is missing; 124 the guest timed out.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
binary=""
break_mode=""
timeout_s=600
log_copy=""
kver="${IBSM_GUEST_KERNEL:-}"

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=${2:?}; shift 2 ;;
    --break) break_mode=${2:?}; shift 2 ;;
    --timeout) timeout_s=${2:?}; shift 2 ;;
    --log) log_copy=${2:?}; shift 2 ;;
    --kernel) kver=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    *) echo "run.sh: unknown argument $1" >&2; usage ;;
  esac
done

say() { echo "guest: $*" >&2; }
missing() { echo "guest: SKIP-PREREQUISITE: $*" >&2; exit 77; }

qemu=$(command -v qemu-system-x86_64 || true)
[ -n "$qemu" ] || missing "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"
busybox=""
for b in /bin/busybox /usr/bin/busybox "$(command -v busybox || true)"; do
  if [ -n "$b" ] && [ -x "$b" ] && ! ldd "$b" >/dev/null 2>&1; then busybox=$b; break; fi
done
[ -n "$busybox" ] || missing "no static busybox (apt-get install busybox-static)"

if [ -z "$kver" ]; then
  for k in $(ls -1 /boot 2>/dev/null | sed -n 's/^vmlinuz-//p' | sort -V -r); do
    if grep -q 'vfio-pci\.ko' "/lib/modules/$k/modules.dep" 2>/dev/null; then kver=$k; break; fi
  done
fi
[ -n "$kver" ] || missing "no /boot/vmlinuz-* with vfio modules (apt-get install linux-image-amd64)"
kernel=/boot/vmlinuz-$kver
mods=/lib/modules/$kver
[ -e "$kernel" ] || missing "$kernel does not exist"
[ -r "$kernel" ] || missing "$kernel is not readable (Debian makes kernel images root-only: run as root, or sudo chmod a+r $kernel)"
[ -f "$mods/modules.dep" ] || missing "$mods/modules.dep not found"

if [ -z "$binary" ]; then
  say "building the test binary (cargo build -p hwtest --bin vfio-kernel-tests)"
  (cd "$repo" && cargo build -q -p hwtest --bin vfio-kernel-tests)
  binary="${CARGO_TARGET_DIR:-$repo/target}/debug/vfio-kernel-tests"
fi
[ -x "$binary" ] || { echo "guest: $binary is not an executable" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/ibsm-guest.XXXXXX")
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
root=$work/root
mkdir -p "$root"/{bin,dev,etc,proc,sys,tmp,lib/modules}

# --- busybox, /init, configuration -------------------------------------------------------
cp "$busybox" "$root/bin/busybox"
cp "$here/init" "$root/init"
chmod 755 "$root/init"
edu=0000:00:02.0 nic=0000:00:03.0 nonviable=0000:00:04.0
{
  echo "export IBSM_HWTEST_EDU=$edu"
  echo "export IBSM_HWTEST_E1000E=$nic"
  echo "export IBSM_HWTEST_NONVIABLE=$nonviable"
  echo "export IBSM_HWTEST_IOMMU=type1v2"
  [ -z "$break_mode" ] || echo "export IBSM_HWTEST_BREAK=$break_mode"
  echo "IBSM_GUEST_BIND='$edu $nic $nonviable'"
} > "$root/etc/ibsm-guest.env"

# --- kernel modules: vfio-pci and vfio_iommu_type1 with their dependencies, in load order --
order=()
declare -A seen=()
dep_of() { grep -E "(^|/)$1\.ko(\.[a-z]+)?:" "$mods/modules.dep" | head -n1; }
add_module() {
  local line path deps d
  line=$(dep_of "$1")
  [ -n "$line" ] || { echo "guest: module $1 not in $mods/modules.dep" >&2; exit 77; }
  path=${line%%:*}
  deps=${line#*:}
  [ -z "${seen[$path]:-}" ] || return 0
  seen[$path]=1
  for d in $deps; do
    d=$(basename "$d"); add_module "${d%%.ko*}"
  done
  order+=("$path")
}
add_module vfio_iommu_type1
add_module vfio-pci
: > "$root/lib/modules/load-order"
for path in "${order[@]}"; do
  name=$(basename "$path"); name=${name%%.ko*}
  case "$path" in
    *.ko) cp "$mods/$path" "$root/lib/modules/$name.ko" ;;
    *.ko.xz) xz -dc "$mods/$path" > "$root/lib/modules/$name.ko" ;;
    *.ko.zst) zstd -qdc "$mods/$path" > "$root/lib/modules/$name.ko" ;;
    *.ko.gz) gzip -dc "$mods/$path" > "$root/lib/modules/$name.ko" ;;
    *) echo "guest: unknown module format $path" >&2; exit 77 ;;
  esac
  echo "$name" >> "$root/lib/modules/load-order"
done

# --- the test binary and its shared libraries (as ldd resolves them on this machine) -----
if command -v strip >/dev/null; then
  strip --strip-debug -o "$root/bin/vfio-kernel-tests" "$binary"
else
  cp "$binary" "$root/bin/vfio-kernel-tests"
fi
if ldd "$binary" >/dev/null 2>&1; then
  for lib in $(ldd "$binary" | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
fi

if command -v cpio >/dev/null; then cpio=(cpio --quiet); else cpio=("$busybox" cpio); fi
(cd "$root" && find . | "${cpio[@]}" -o -H newc) > "$work/initrd.cpio"
say "kernel $kver, $(wc -l < "$root/lib/modules/load-order") modules, initramfs $(( $(stat -c %s "$work/initrd.cpio") / 1024 )) KiB${break_mode:+, break=$break_mode}"

# --- boot ---------------------------------------------------------------------------------
# edu at 00:02.0 and e1000e at 00:03.0 each get their own IOMMU group; edu at 00:04.0 shares a
# multi-function slot (no ACS) with a PCI serial port that the built-in 8250_pci driver binds:
# that group can never be viable for VFIO.
serial=$work/serial.log
start=$(date +%s.%N)
set +e
timeout -k 10 "$timeout_s" "$qemu" \
  -accel tcg -M q35,kernel-irqchip=split -m 512 -smp 1 \
  -nodefaults -display none -monitor none -no-reboot \
  -chardev "file,id=con,path=$serial" -serial chardev:con \
  -device intel-iommu,intremap=on,caching-mode=on \
  -kernel "$kernel" -initrd "$work/initrd.cpio" \
  -append "console=ttyS0 intel_iommu=on panic=-1 loglevel=4" \
  -device edu,addr=02.0 \
  -device e1000e,addr=03.0,romfile= \
  -device edu,addr=04.0,multifunction=on -device pci-serial,addr=04.1 \
  </dev/null 2> "$work/qemu.err"
qrc=$?
set -e
secs=$(echo "$(date +%s.%N) $start" | awk '{printf "%.1f", $1 - $2}')
tr -d '\r' < "$serial" > "$work/out.log" 2>/dev/null || true
[ -z "$log_copy" ] || cp "$work/out.log" "$log_copy"
cat "$work/out.log"
grep -v 'has no peer' "$work/qemu.err" | sed 's/^/qemu: /' >&2 || true

if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
  say "TIMEOUT: the guest did not finish within $timeout_s s"
  exit 124
fi
plan=$(sed -n 's/^IBSM-GUEST-PLAN //p' "$work/out.log" | head -n1)
if [ -z "$plan" ]; then
  say "FAILED: the test binary never started (qemu exit $qrc, see the log above)"
  exit 1
fi
bad=0
for name in $plan; do
  if ! grep -q "^PASS $name " "$work/out.log"; then
    say "no PASS line for $name"
    bad=1
  fi
done
grep -q '^IBSM-GUEST-EXIT 0$' "$work/out.log" || { say "the test binary did not exit 0"; bad=1; }
up=$(sed -n 's/^IBSM-GUEST-UPTIME \(tests\|done\) //p' "$work/out.log" | tr '\n' ' ')
say "guest run took $secs s wall (QEMU TCG), guest uptime at tests/done: ${up:-?}"
if [ "$bad" -ne 0 ]; then
  say "FAILED"
  exit 1
fi
say "all $(echo "$plan" | wc -w) cases passed"
