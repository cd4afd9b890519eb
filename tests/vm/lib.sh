# Helpers sourced before every guest test script (busybox sh).
# Results go to files in the current directory (/out, the 9p share).

# json_str TEXT: TEXT as a JSON string literal (quotes and backslashes
# escaped, line breaks and tabs as spaces, other control characters dropped).
json_str() {
    printf '"%s"' "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr '\n\t' '  ' | tr -d '\001-\037')"
}

# sysattr FILE: the attribute's text with surrounding blanks trimmed, or
# nothing when it does not exist.
sysattr() {
    [ -r "$1" ] || return 0
    sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$1" 2>/dev/null | head -n1
}

# vpd80_serial FILE: the unit serial number from a raw VPD page 0x80 (bytes
# 4.. after the 4-byte header), printable ASCII only, blanks trimmed.
vpd80_serial() {
    [ -r "$1" ] || return 0
    tail -c +5 "$1" | tr -cd ' -~' | sed -e 's/^ *//' -e 's/ *$//'
}

# disk_names: the /sys/block names of the sd*, nvme* and vd* disks.
disk_names() {
    for p in /sys/block/sd* /sys/block/nvme* /sys/block/vd*; do
        [ -e "$p" ] && echo "${p##*/}"
    done
    return 0
}

# disk_json NAME: one JSON object describing /sys/block/NAME.
disk_json() {
    d=/sys/block/$1
    serial=$(sysattr "$d/device/serial")
    serial_source=serial
    if [ -z "$serial" ]; then
        serial=$(vpd80_serial "$d/device/vpd_pg80")
        serial_source=vpd_pg80
    fi
    printf '{"name":%s,"size_512":%s,"logical_block_size":%s,"vendor":%s,"model":%s,"serial":%s,"serial_source":%s,"wwid":%s,"devpath":%s}' \
        "$(json_str "$1")" \
        "$(cat "$d/size")" \
        "$(cat "$d/queue/logical_block_size")" \
        "$(json_str "$(sysattr "$d/device/vendor")")" \
        "$(json_str "$(sysattr "$d/device/model")")" \
        "$(json_str "$serial")" \
        "$(json_str "$serial_source")" \
        "$(json_str "$(sysattr "$d/device/wwid")$(sysattr "$d/wwid")")" \
        "$(json_str "$(readlink -f "$d")")"
}

# disks_json: a JSON array of every sd*/nvme*/vd* disk.
disks_json() {
    sep=''
    printf '['
    for n in $(disk_names); do
        printf '%s' "$sep"
        disk_json "$n"
        sep=','
    done
    printf ']'
}

# modules_json: a JSON array of the names in /proc/modules.
modules_json() {
    sep=''
    printf '['
    for m in $(cut -d' ' -f1 /proc/modules); do
        printf '%s%s' "$sep" "$(json_str "$m")"
        sep=','
    done
    printf ']'
}

# disk_by_serial SERIAL: the /sys/block name of the disk with that serial.
disk_by_serial() {
    for n in $(disk_names); do
        s=$(sysattr "/sys/block/$n/device/serial")
        [ -n "$s" ] || s=$(vpd80_serial "/sys/block/$n/device/vpd_pg80")
        if [ "$s" = "$1" ]; then echo "$n"; return 0; fi
    done
    return 1
}

# disk_by_model MODEL: the first disk whose device/model is MODEL.
disk_by_model() {
    for n in $(disk_names); do
        if [ "$(sysattr "/sys/block/$n/device/model")" = "$1" ]; then echo "$n"; return 0; fi
    done
    return 1
}

# run_json NAME CMD...: runs CMD, saving stdout to NAME.out, stderr to
# NAME.err and the exit status to NAME.status. Its start and end go to the
# console with the guest's uptime, so a guest the host kills for taking too
# long names the run it was in.
run_json() {
    name=$1
    shift
    echo "drivelab-vm: run $name at $(cut -d' ' -f1 /proc/uptime) s" > /dev/console
    "$@" > "$name.out" 2> "$name.err"
    st=$?
    echo "$st" > "$name.status"
    echo "drivelab-vm: run $name exited $st at $(cut -d' ' -f1 /proc/uptime) s" > /dev/console
}

# hotplug REQUEST [SECONDS]: asks the host to carry out REQUEST of the VM's
# hot-plug plan (add-ID plugs the disk ID in, del-ID pulls it; see
# crates/vmtest/src/hotplug.rs) by writing /out/plug-REQUEST, and waits for
# the host's answer (default 120 s), then removes the marker. 0 when done;
# 1 when it failed (the reason, QMP's own when QEMU refused, is printed
# and stays in /out/plug-REQUEST.failed) or no answer came.
hotplug() {
    rm -f "/out/plug-$1.done" "/out/plug-$1.failed"
    echo "drivelab-vm: hotplug $1 at $(cut -d' ' -f1 /proc/uptime) s" > /dev/console
    touch "/out/plug-$1"
    st=1
    i=0
    while [ "$i" -lt $(( ${2:-120} * 10 )) ]; do
        if [ -e "/out/plug-$1.done" ]; then
            st=0
            break
        fi
        if [ -e "/out/plug-$1.failed" ]; then
            echo "hotplug $1 failed: $(cat "/out/plug-$1.failed")"
            break
        fi
        sleep 0.1
        i=$((i + 1))
    done
    [ "$i" -lt $(( ${2:-120} * 10 )) ] || echo "hotplug $1: no answer from the host in ${2:-120} s"
    rm -f "/out/plug-$1"
    return $st
}

# What the emulator tests' scripts share.
# mark NAME: NAME and the guest's uptime appended to marks.txt.
mark() { echo "$1 $(cut -d' ' -f1 /proc/uptime)" >> marks.txt; }
# md5 DEV: the MD5 of DEV's whole content, read with O_DIRECT.
md5() { dd if=$1 bs=64k iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1; }
# bg NAME COMMAND...: run it in the background as run_json would keep it.
bg() { n=$1; shift; ( "$@" > $n.out 2> $n.err < /dev/null; echo $? > $n.status ) & }
# await NAME: until bg NAME has finished (at most 6 minutes).
await() { i=0; while [ ! -s $1.status ] && [ $i -lt 3600 ]; do sleep 0.1; i=$((i + 1)); done; }
# until_in FILE REGEX: until FILE holds REGEX (at most 2 minutes).
until_in() { i=0; while ! grep -Eq "$2" $1 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done; }
# ctrl_of SERIAL: the /dev node of the NVMe controller with that serial.
ctrl_of() { for c in /sys/class/nvme/nvme*; do [ "$(sysattr $c/serial)" = "$1" ] && echo /dev/${c##*/}; done; return 0; }
# wait_block DEV: until DEV is a block device (at most 30 s).
wait_block() { i=0; while [ ! -b $1 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done; }
# disk_of SERIAL: the /dev node of the SCSI disk with that unit serial.
disk_of() { for d in /sys/block/sd*; do [ "$(vpd80_serial $d/device/vpd_pg80)" = "$1" ] && echo /dev/${d##*/}; done; return 0; }
