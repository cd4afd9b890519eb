#!/bin/busybox sh
# PID 1 of a drivelab test guest (built into the initramfs by crates/vmtest).
# Mounts the kernel filesystems, loads the modules listed by the host in
# dependency order, mounts the 9p result share at /out, waits for the
# expected disks, runs the test script with the helper library, saves the
# kernel log, and powers off. Anything the host reads comes from /out.

/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /tmp /run /out

# shellcheck source=/dev/null # written by the harness
. /etc/vm/config

log() { echo "drivelab-vm: $*"; echo "$*" >> /run/init.log; }

log "init at $(cut -d' ' -f1 /proc/uptime) s"
while read -r mod params; do
    [ -n "$mod" ] || continue
    # shellcheck disable=SC2086 # params are word-split on purpose
    if insmod "/lib/modules/$mod" $params 2>>/run/init.log; then
        echo "insmod ok $mod $params" >> /run/init.log
    else
        log "insmod FAILED $mod $params"
    fi
done < /etc/vm/modules

if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 out /out; then
    log "cannot mount the 9p share 'out': results cannot reach the host"
    poweroff -f
fi
cp /run/init.log /out/init.log

# Wait (at most DISK_WAIT_S seconds) until the expected number of disks shows.
count_disks() {
    n=0
    for p in /sys/block/sd* /sys/block/nvme* /sys/block/vd*; do
        [ -e "$p" ] && n=$((n + 1))
    done
    echo "$n"
}
i=0
while [ "$(count_disks)" -lt "$EXPECT_DISKS" ] && [ "$i" -lt $((DISK_WAIT_S * 10)) ]; do
    sleep 0.1
    i=$((i + 1))
done
log "disks: $(echo /sys/block/* | sed 's|/sys/block/||g') (expected $EXPECT_DISKS)"

cut -d' ' -f1 /proc/uptime > /out/uptime_script_start
log "test script starts"
( cd /out && sh -c '. /etc/vm/lib.sh; . /etc/vm/test.sh' ) > /out/script.log 2>&1
echo $? > /out/script_status.tmp
cut -d' ' -f1 /proc/uptime > /out/uptime_script_end
dmesg > /out/dmesg.txt
mv /out/script_status.tmp /out/script_status
log "test script exited $(cat /out/script_status)"
sync
umount /out
poweroff -f
# poweroff -f should not return; -no-reboot turns a reboot into an exit too.
reboot -f
