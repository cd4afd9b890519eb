//! Page-aligned I/O buffers for O_DIRECT, allocated once per job.
//!
//! Every safe function here is checked in release builds too: a slot that
//! does not exist panics with a message naming it (a programming error in
//! the caller), and [`BufferPool::check`] / [`BufferPool::io_ptr`] let an
//! engine refuse a transfer longer than a buffer before it reaches the
//! kernel. No safe function hands out a pointer or slice outside the
//! mapping.

use std::ptr::NonNull;

/// Buffer alignment and the unit the stride is rounded up to, in bytes.
const PAGE: usize = 4096;

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

// SAFETY: the mapping is plain memory owned by the pool and reached only
// through it; moving the pool to another thread moves that ownership.
unsafe impl Send for BufferPool {}

impl BufferPool {
    /// Map `count` buffers (at least 1) of `size` bytes (at least 1, rounded
    /// up to a multiple of 4096), each starting on a page boundary, holding
    /// what `fill` says. A pool whose length overflows `usize` is refused
    /// with `InvalidInput`.
    pub fn new(count: usize, size: usize, fill: Fill) -> std::io::Result<BufferPool> {
        let count = count.max(1);
        let too_big = || {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("a pool of {count} buffers of {size} bytes does not fit in memory"),
            )
        };
        let stride = size
            .max(1)
            .div_ceil(PAGE)
            .checked_mul(PAGE)
            .ok_or_else(too_big)?;
        let len = stride.checked_mul(count).ok_or_else(too_big)?;
        // SAFETY: an anonymous private mapping with no address hint and no
        // file; the result is checked for MAP_FAILED before use.
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
        let mut pool = BufferPool {
            base,
            stride,
            count,
            len,
        };
        if let Fill::Random(seed) = fill {
            let mut s = seed | 1;
            for chunk in pool.as_mut_slice().chunks_exact_mut(8) {
                chunk.copy_from_slice(&drivelab_patterns::prng::splitmix64(&mut s).to_le_bytes());
            }
        }
        Ok(pool)
    }

    /// The whole mapping as one slice.
    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is `len` bytes, readable and writable, owned
        // by the pool for its whole life, and `&mut self` guarantees no
        // other slice of it is alive.
        unsafe { std::slice::from_raw_parts_mut(self.base.as_ptr(), self.len) }
    }

    /// Number of buffers.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Bytes between buffer starts (≥ the requested size, page multiple):
    /// the longest transfer a buffer holds.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Whether buffer `i` exists and holds a transfer of `len` bytes; an
    /// engine calls this before handing the buffer to the kernel for an
    /// I/O of that length.
    #[inline]
    pub fn check(&self, i: usize, len: usize) -> bool {
        i < self.count && len <= self.stride
    }

    /// Pointer to buffer `i`, valid for `stride()` bytes while the pool
    /// lives.
    ///
    /// # Panics
    /// If `i >= count()`: a slot that does not exist is a bug in the caller.
    #[inline]
    pub fn ptr(&self, i: usize) -> *mut u8 {
        assert!(
            i < self.count,
            "buffer slot {i} out of range: the pool has {} buffers",
            self.count
        );
        // SAFETY: i < count, so i * stride < len and the offset stays inside
        // the mapping (no overflow: len = stride * count fits in usize).
        unsafe { self.base.as_ptr().add(i * self.stride) }
    }

    /// Pointer to buffer `i` for a transfer of `len` bytes, or `None` when
    /// the buffer does not exist or is shorter than `len` (see
    /// [`check`](Self::check)); the pointer is valid for `len` bytes while
    /// the pool lives.
    #[inline]
    pub fn io_ptr(&self, i: usize, len: usize) -> Option<*mut u8> {
        self.check(i, len).then(|| self.ptr(i))
    }

    /// Buffer `i` as a slice of `stride()` bytes.
    ///
    /// # Panics
    /// If `i >= count()`: a slot that does not exist is a bug in the caller.
    pub fn slice(&mut self, i: usize) -> &mut [u8] {
        let p = self.ptr(i);
        // SAFETY: `ptr` checked i < count, so buffer i's `stride` bytes lie
        // inside the mapping, and `&mut self` guarantees no other slice of
        // the pool is alive.
        unsafe { std::slice::from_raw_parts_mut(p, self.stride) }
    }

    /// Buffer `i` as a slice, or `None` if the pool has no buffer `i`.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut [u8]> {
        (i < self.count).then(|| self.slice(i))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stride_is_a_page_multiple_and_buffers_are_page_aligned() {
        let p = BufferPool::new(3, 5000, Fill::Zeroed).unwrap();
        assert_eq!(p.count(), 3);
        assert_eq!(p.stride(), 8192);
        for i in 0..3 {
            assert_eq!(p.ptr(i) as usize % PAGE, 0, "buffer {i}");
        }
        assert_eq!(p.ptr(1) as usize - p.ptr(0) as usize, 8192);
    }

    #[test]
    fn empty_requests_still_get_one_page_buffer() {
        let p = BufferPool::new(0, 0, Fill::Zeroed).unwrap();
        assert_eq!((p.count(), p.stride()), (1, PAGE));
    }

    #[test]
    fn zeroed_pool_reads_zero_and_random_pool_does_not() {
        let mut z = BufferPool::new(2, 4096, Fill::Zeroed).unwrap();
        for i in 0..2 {
            assert!(z.slice(i).iter().all(|&b| b == 0), "buffer {i}");
        }
        let mut r = BufferPool::new(2, 4096, Fill::Random(7)).unwrap();
        let zeros = r.slice(1).iter().filter(|&&b| b == 0).count();
        // Random bytes: about 16 zeroes in 4096, never most of them.
        assert!(zeros < 200, "{zeros} zero bytes in a random buffer");
        assert_ne!(r.slice(0).to_vec(), r.slice(1).to_vec());
    }

    #[test]
    fn random_fill_depends_only_on_the_seed() {
        let mut a = BufferPool::new(2, 4096, Fill::Random(42)).unwrap();
        let mut b = BufferPool::new(2, 4096, Fill::Random(42)).unwrap();
        // `seed | 1` is the generator's state, so 42 and 43 fill alike.
        let mut c = BufferPool::new(2, 4096, Fill::Random(45)).unwrap();
        assert_eq!(a.slice(1).to_vec(), b.slice(1).to_vec());
        assert_ne!(a.slice(1).to_vec(), c.slice(1).to_vec());
    }

    #[test]
    fn buffers_do_not_overlap() {
        let mut p = BufferPool::new(4, 4096, Fill::Zeroed).unwrap();
        for i in 0..4 {
            p.slice(i).fill(i as u8 + 1);
        }
        for i in 0..4 {
            assert!(p.slice(i).iter().all(|&b| b == i as u8 + 1), "buffer {i}");
        }
    }

    #[test]
    fn check_refuses_missing_slots_and_long_transfers() {
        let p = BufferPool::new(2, 4096, Fill::Zeroed).unwrap();
        assert!(p.check(0, 4096));
        assert!(p.check(1, 0));
        assert!(!p.check(1, 4097), "a transfer longer than the stride");
        assert!(!p.check(2, 512), "a slot past the end");
        assert!(!p.check(usize::MAX, 1));
        assert_eq!(p.io_ptr(1, 4096), Some(p.ptr(1)));
        assert_eq!(p.io_ptr(1, 4097), None);
        assert_eq!(p.io_ptr(2, 1), None);
    }

    #[test]
    fn get_mut_is_none_past_the_end() {
        let mut p = BufferPool::new(2, 100, Fill::Zeroed).unwrap();
        assert_eq!(p.get_mut(1).map(|s| s.len()), Some(4096));
        assert!(p.get_mut(2).is_none());
    }

    #[test]
    #[should_panic(expected = "buffer slot 2 out of range: the pool has 2 buffers")]
    fn ptr_panics_on_a_missing_slot_in_every_build() {
        let p = BufferPool::new(2, 4096, Fill::Zeroed).unwrap();
        let _ = p.ptr(2);
    }

    #[test]
    #[should_panic(expected = "buffer slot 9 out of range")]
    fn slice_panics_on_a_missing_slot_in_every_build() {
        let mut p = BufferPool::new(2, 4096, Fill::Zeroed).unwrap();
        let _ = p.slice(9);
    }

    #[test]
    fn pools_whose_length_overflows_are_refused() {
        let e = BufferPool::new(usize::MAX / 4096, 8192, Fill::Zeroed).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        let e = BufferPool::new(1, usize::MAX - 10, Fill::Zeroed).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    }

    #[test]
    fn iovecs_cover_every_buffer() {
        let p = BufferPool::new(3, 4096, Fill::Zeroed).unwrap();
        let v = p.iovecs();
        assert_eq!(v.len(), 3);
        for (i, iov) in v.iter().enumerate() {
            assert_eq!(iov.iov_base.cast::<u8>(), p.ptr(i));
            assert_eq!(iov.iov_len, 4096);
        }
    }
}
