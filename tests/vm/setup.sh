#!/usr/bin/env bash
# Installs and caches everything the QEMU test harness (crates/vmtest) needs:
#   - qemu-system-x86, busybox-static and dmsetup from Debian (apt, as root),
#   - the kernel that linux-image-amd64 depends on, downloaded (not installed)
#     and unpacked into the cache dir, plus its uncompressed vmlinux.
# Idempotent: a second run checks and returns in about a second.
# Cache dir: $DRIVELAB_VM_CACHE, default /var/cache/drivelab-vm.
# After a run, $CACHE/kernel.env names the kernel files for the harness.
set -euo pipefail

CACHE="${DRIVELAB_VM_CACHE:-/var/cache/drivelab-vm}"
export DEBIAN_FRONTEND=noninteractive

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
need_apt=()
installed qemu-system-x86 || need_apt+=(qemu-system-x86)
installed busybox-static || need_apt+=(busybox-static)
# dmsetup: copied into guests with its libraries (crates/vmtest/src/tools.rs).
installed dmsetup || need_apt+=(dmsetup)

updated=0
apt_update_once() {
    if [ "$updated" = 0 ]; then
        apt-get update -qq
        updated=1
    fi
}

if [ "${#need_apt[@]}" -gt 0 ]; then
    apt_update_once
    apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

mkdir -p "$CACHE"

# Which kernel package does linux-image-amd64 point at? (Resolved each run:
# a point release moves it, and the old one leaves the mirror.)
resolve_kernel() {
    apt-cache depends linux-image-amd64 2>/dev/null |
        awk '/Depends: linux-image-[0-9]/ {print $2; exit}'
}
kpkg=$(resolve_kernel) || true
if [ -z "${kpkg:-}" ]; then
    apt_update_once
    kpkg=$(resolve_kernel) || true
fi
[ -n "${kpkg:-}" ] || { echo "setup.sh: cannot find the kernel package linux-image-amd64 depends on (apt-get update?)" >&2; exit 1; }
kdir="$CACHE/$kpkg"

if [ ! -e "$kdir/.unpacked" ]; then
    rm -rf "$kdir" "$CACHE/dl"
    mkdir -p "$CACHE/dl"
    if ! (cd "$CACHE/dl" && apt-get download -qq "$kpkg" 2>/dev/null); then
        # Stale package lists: refresh, re-resolve, retry once.
        apt_update_once
        kpkg=$(resolve_kernel)
        kdir="$CACHE/$kpkg"
        rm -rf "$kdir"
        (cd "$CACHE/dl" && apt-get download -qq "$kpkg")
    fi
    mkdir -p "$kdir"
    dpkg-deb -x "$CACHE"/dl/*.deb "$kdir"
    rm -rf "$CACHE/dl"
    touch "$kdir/.unpacked"
    # Keep one kernel: drop older unpacked ones.
    for old in "$CACHE"/linux-image-*; do
        [ "$old" = "$kdir" ] || rm -rf "$old"
    done
fi

vmlinuz=$(ls "$kdir"/boot/vmlinuz-* | head -n1)
kver=${vmlinuz##*/vmlinuz-}
moddir="$kdir/lib/modules/$kver"
[ -d "$moddir" ] || { echo "setup.sh: no module dir $moddir in $kpkg" >&2; exit 1; }

# The package ships no modules.dep (its postinst runs depmod): make one in
# the unpacked tree with busybox's depmod; the harness reads it.
if [ ! -s "$moddir/modules.dep" ]; then
    busybox depmod -b "$kdir" "$kver"
fi

# The uncompressed vmlinux (an ELF) boots fastest with qboot. The bzImage
# carries it xz-compressed: find the xz stream magic and decompress from there
# (what the kernel's scripts/extract-vmlinux does, written out here).
vmlinux="$kdir/vmlinux"
if [ ! -s "$vmlinux" ]; then
    tmp="$vmlinux.tmp"
    rm -f "$tmp"
    for off in $(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$vmlinuz" | cut -d: -f1); do
        tail -c +"$((off + 1))" "$vmlinuz" | xz -dc 2>/dev/null > "$tmp" || true
        if [ "$(head -c 4 "$tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
            break
        fi
        rm -f "$tmp"
    done
    [ -s "$tmp" ] || { echo "setup.sh: no xz-compressed ELF found in $vmlinuz" >&2; exit 1; }
    mv "$tmp" "$vmlinux"
fi

cat > "$CACHE/kernel.env.tmp" <<ENV
DRIVELAB_VM_KVER=$kver
DRIVELAB_VM_VMLINUX=$vmlinux
DRIVELAB_VM_BZIMAGE=$vmlinuz
DRIVELAB_VM_MODULES=$moddir
ENV
mv "$CACHE/kernel.env.tmp" "$CACHE/kernel.env"

# The static binary build needs the gnu target's std (installed with the
# toolchain on x86_64 hosts); nothing to fetch.
echo "setup.sh: ready: $(qemu-system-x86_64 --version | head -n1); kernel $kver; cache $CACHE"
