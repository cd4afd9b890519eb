//! Where and at what priority a job's thread runs: the I/O priority of the
//! thread (`ioprio_set`, fio's `prio`/`prioclass`), the CPUs it may run on
//! (`sched_setaffinity`, fio's `numa_cpu_nodes`) and its NUMA memory policy
//! (`set_mempolicy`, fio's `numa_mem_policy`). Each call affects only the
//! calling thread.

/// `IOPRIO_WHO_PROCESS`: with who = 0, the calling thread.
const IOPRIO_WHO_PROCESS: libc::c_long = 1;
/// Bits of the level in an ioprio value; the class is above them.
pub const IOPRIO_CLASS_SHIFT: u32 = 13;

/// The kernel's ioprio value of a class (1 realtime, 2 best-effort, 3 idle)
/// and level (0-7); class 0 means best-effort, as fio takes it.
pub fn ioprio_value(class: u8, level: u8) -> u16 {
    let class = if class == 0 { 2 } else { class };
    (u16::from(class) << IOPRIO_CLASS_SHIFT) | u16::from(level & 7)
}

/// Set the calling thread's I/O priority to `value` (see [`ioprio_value`]).
pub fn set_thread_ioprio(value: u16) -> std::io::Result<()> {
    // SAFETY: ioprio_set takes three integers by value and touches no
    // memory of ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            0 as libc::c_long,
            libc::c_long::from(value),
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's I/O priority value.
pub fn thread_ioprio() -> std::io::Result<u16> {
    // SAFETY: ioprio_get takes two integers by value and returns the value.
    let r = unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0 as libc::c_long) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(r as u16)
}

/// Add `inc` to the calling thread's nice value, as nice(2) does for the
/// process fio runs a job in (Linux keeps a nice value per thread);
/// returns the new value.
pub fn add_thread_nice(inc: i32) -> std::io::Result<i32> {
    let want = (thread_nice()? + inc).clamp(-20, 19);
    set_thread_nice(want)?;
    Ok(want)
}

/// Set the calling thread's nice value (raising it back needs
/// `CAP_SYS_NICE` or room under `RLIMIT_NICE`).
pub fn set_thread_nice(nice: i32) -> std::io::Result<()> {
    // SAFETY: setpriority only reads its integer arguments; PRIO_PROCESS
    // with who 0 is the calling thread on Linux.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice.clamp(-20, 19)) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's nice value.
pub fn thread_nice() -> std::io::Result<i32> {
    // SAFETY: errno is the calling thread's; getpriority only reads its
    // integer arguments. -1 is a valid nice value, so errno tells.
    unsafe {
        *libc::__errno_location() = 0;
        let cur = libc::getpriority(libc::PRIO_PROCESS, 0);
        if cur == -1 && *libc::__errno_location() != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(cur)
    }
}

/// Let the calling thread run only on `cpus`.
pub fn set_thread_cpus(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c >= libc::CPU_SETSIZE as usize {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: c is below CPU_SETSIZE, checked above.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: pid 0 is the calling thread; the set is a local that outlives
    // the call and its size is passed with it.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The CPUs the calling thread may run on.
pub fn thread_cpus() -> std::io::Result<Vec<usize>> {
    // SAFETY: as in set_thread_cpus.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel writes at most the size passed into the local set.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: c is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// A NUMA memory policy mode (`set_mempolicy`'s `MPOL_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemPolicy {
    /// The system's default.
    Default,
    /// Prefer the one node given.
    Preferred,
    /// Allocate only on the nodes given.
    Bind,
    /// Interleave pages over the nodes given.
    Interleave,
    /// Allocate on the node of the CPU that asks.
    Local,
}

impl MemPolicy {
    fn mode(self) -> libc::c_long {
        match self {
            MemPolicy::Default => 0,
            MemPolicy::Preferred => 1,
            MemPolicy::Bind => 2,
            MemPolicy::Interleave => 3,
            MemPolicy::Local => 4,
        }
    }
}

/// Set the calling thread's memory policy over `nodes` (ignored for
/// Default and Local).
pub fn set_thread_mempolicy(policy: MemPolicy, nodes: &[u32]) -> std::io::Result<()> {
    let mut mask = [0u64; 16];
    let bits = mask.len() * 64;
    let mut any = false;
    if !matches!(policy, MemPolicy::Default | MemPolicy::Local) {
        for &n in nodes {
            let n = n as usize;
            if n >= bits {
                return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
            }
            mask[n / 64] |= 1 << (n % 64);
            any = true;
        }
    }
    let (ptr, maxnode) = if any {
        (mask.as_ptr(), bits as libc::c_long + 1)
    } else {
        (std::ptr::null(), 0)
    };
    // SAFETY: the node mask is a local array of `bits` bits that outlives
    // the call (or null with maxnode 0); the kernel only reads it.
    let r = unsafe { libc::syscall(libc::SYS_set_mempolicy, policy.mode(), ptr, maxnode) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's memory policy mode (`MPOL_*` number) and nodes.
pub fn thread_mempolicy() -> std::io::Result<(i32, Vec<u32>)> {
    let mut mode: libc::c_int = 0;
    let mut mask = [0u64; 16];
    let bits = mask.len() * 64;
    // SAFETY: mode and mask are locals that outlive the call; maxnode says
    // how many bits the mask holds; addr is null with flags 0.
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            mask.as_mut_ptr(),
            bits as libc::c_long,
            std::ptr::null::<libc::c_void>(),
            0 as libc::c_long,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let nodes = (0..bits as u32)
        .filter(|&n| mask[n as usize / 64] & (1 << (n % 64)) != 0)
        .collect();
    Ok((mode, nodes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioprio_values_are_the_kernels() {
        assert_eq!(ioprio_value(1, 0), 1 << 13);
        assert_eq!(ioprio_value(0, 7), (2 << 13) | 7);
        assert_eq!(ioprio_value(3, 2), (3 << 13) | 2);
    }

    #[test]
    fn a_thread_priority_is_set_and_read_back() {
        std::thread::spawn(|| {
            set_thread_ioprio(ioprio_value(2, 5)).unwrap();
            assert_eq!(thread_ioprio().unwrap(), ioprio_value(2, 5));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn affinity_and_mempolicy_are_set_and_read_back() {
        std::thread::spawn(|| {
            let cpus = thread_cpus().unwrap();
            set_thread_cpus(&cpus[..1]).unwrap();
            assert_eq!(thread_cpus().unwrap(), cpus[..1]);
            set_thread_mempolicy(MemPolicy::Bind, &[0]).unwrap();
            assert_eq!(thread_mempolicy().unwrap(), (2, vec![0]));
            set_thread_mempolicy(MemPolicy::Default, &[]).unwrap();
            assert_eq!(thread_mempolicy().unwrap().0, 0);
        })
        .join()
        .unwrap();
    }
}
