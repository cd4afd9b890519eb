//! Page-aligned I/O buffers for O_DIRECT, allocated once per job.

use std::ptr::NonNull;

/// What a new pool's buffers hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Pseudo-random bytes from this seed, so compressing or deduplicating
    /// devices see incompressible data, as with fio's default.
    Random(u64),
    /// Zeroes as the kernel maps them, nothing written: for callers that
    /// read into the buffers or fill each one themselves (a 64 MiB pool
    /// costs a pass of page zeroing instead of that plus a pass of random
    /// numbers).
    Zeroed,
}

/// One anonymous mapping holding `count` buffers of `size` bytes each, every
/// buffer aligned to at least 4096 bytes (so to any logical block size up
/// to 4 KiB; larger alignments are rounded up to `size`'s page multiple).
#[derive(Debug)]
pub struct BufferPool {
    base: NonNull<u8>,
    stride: usize,
    count: usize,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by the pool; the job thread that
// owns the pool is the only one touching it.
unsafe impl Send for BufferPool {}

impl BufferPool {
    /// Map `count` buffers of `size` bytes, each starting on a page
    /// boundary, holding what `fill` says.
    pub fn new(count: usize, size: usize, fill: Fill) -> std::io::Result<BufferPool> {
        let stride = size.max(1).div_ceil(4096) * 4096;
        let len = stride * count.max(1);
        // SAFETY: an anonymous private mapping with no address hint; the
        // result is checked for MAP_FAILED before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(std::io::Error::last_os_error)?;
        let pool = BufferPool {
            base,
            stride,
            count: count.max(1),
            len,
        };
        if let Fill::Random(seed) = fill {
            // SAFETY: the mapping is `len` bytes, readable and writable, and
            // nothing else refers to it yet.
            let all = unsafe { std::slice::from_raw_parts_mut(base.as_ptr(), len) };
            let mut s = seed | 1;
            for chunk in all.chunks_exact_mut(8) {
                chunk.copy_from_slice(&drivelab_patterns::prng::splitmix64(&mut s).to_le_bytes());
            }
        }
        Ok(pool)
    }

    /// Number of buffers.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Bytes between buffer starts (≥ the requested size, page multiple).
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Pointer to buffer `i` (i < count).
    #[inline]
    pub fn ptr(&self, i: usize) -> *mut u8 {
        debug_assert!(i < self.count);
        // SAFETY: i < count, so the offset stays inside the mapping.
        unsafe { self.base.as_ptr().add(i * self.stride) }
    }

    /// Buffer `i` as a slice.
    pub fn slice(&mut self, i: usize) -> &mut [u8] {
        // SAFETY: buffer i lies inside the mapping and &mut self guarantees
        // no other slice of the pool is alive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(i), self.stride) }
    }

    /// iovecs for registering every buffer with io_uring.
    pub fn iovecs(&self) -> Vec<libc::iovec> {
        (0..self.count)
            .map(|i| libc::iovec {
                iov_base: self.ptr(i).cast(),
                iov_len: self.stride,
            })
            .collect()
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        // SAFETY: base/len are exactly what mmap returned; the pool is the
        // only owner and the ring that registered it is dropped first (the
        // job keeps the engine, which owns the pool, in that order).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}
