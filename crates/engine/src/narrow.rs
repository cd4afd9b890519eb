//! Narrowing a failed command down to the blocks that keep failing, as DMM
//! reports the exact LBA of a medium error: when one command over many
//! blocks fails, the range is halved and each half tried again with a
//! synchronous command of its own, down to single logical blocks. Only the
//! failing halves are split further, so a range of `n` blocks with one bad
//! block costs about `2·log2(n)` commands, not `n`.
//!
//! The commands themselves belong to the caller (an O_DIRECT read on a
//! second descriptor, a pattern write through the claim, a WRITE SAME):
//! [`narrow`] only decides which ranges to try. [`aligned`] gives the
//! caller a page-aligned scratch slice for those O_DIRECT transfers without
//! unsafe code.

/// What [`narrow`] found in a failed range.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Narrowed {
    /// Bytes whose commands succeeded on the retry.
    pub good: u64,
    /// The failing ranges, in ascending order: (byte offset, bytes, error),
    /// adjacent blocks with the same error merged into one range.
    pub bad: Vec<(u64, u64, String)>,
    /// Commands sent while narrowing.
    pub commands: u64,
}

/// Narrow a range `[off, off + len)` whose command failed (with `why`)
/// down to the `lbs`-byte blocks that keep failing: halve it, try each half
/// with `op(offset, bytes)`, split failing halves again down to single
/// blocks. A range of one block is not tried again (its failure is `why`).
/// Lower halves are tried first, so the bad ranges come out in ascending
/// order.
pub fn narrow(
    off: u64,
    len: u64,
    lbs: u64,
    why: String,
    op: &mut impl FnMut(u64, u64) -> Result<(), String>,
) -> Narrowed {
    let mut out = Narrowed::default();
    let push_bad =
        |bad: &mut Vec<(u64, u64, String)>, o: u64, l: u64, e: String| match bad.last_mut() {
            Some(b) if b.0 + b.1 == o && b.2 == e => b.1 += l,
            _ => bad.push((o, l, e)),
        };
    let lbs = lbs.max(1);
    let mut stack = Vec::new();
    if len <= lbs {
        push_bad(&mut out.bad, off, len, why);
    } else {
        let h = (len / lbs / 2) * lbs;
        stack.push((off + h, len - h));
        stack.push((off, h));
    }
    while let Some((o, l)) = stack.pop() {
        out.commands += 1;
        match op(o, l) {
            Ok(()) => out.good += l,
            Err(e) if l <= lbs => push_bad(&mut out.bad, o, l, e),
            Err(_) => {
                let h = (l / lbs / 2) * lbs;
                // Pop order: the lower half first.
                stack.push((o + h, l - h));
                stack.push((o, h));
            }
        }
    }
    out
}

/// An aligned scratch slice of `len` bytes inside `buf`, for synchronous
/// O_DIRECT reads and writes without unsafe code: over-allocate and start
/// at the first 4096-aligned byte. `buf` is reused across calls.
pub fn aligned(buf: &mut Vec<u8>, len: usize) -> &mut [u8] {
    buf.resize(len + 4096, 0);
    let off = (4096 - (buf.as_ptr() as usize % 4096)) % 4096;
    &mut buf[off..off + len]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_finds_exactly_the_failing_blocks() {
        // A 64-block range (512-byte blocks) where blocks 5, 6 and 40 fail:
        // any command touching them fails.
        let lbs = 512u64;
        let bad_blocks = [5u64, 6, 40];
        let mut calls = 0;
        let mut op = |o: u64, l: u64| {
            calls += 1;
            let (first, n) = (o / lbs, l / lbs);
            if bad_blocks.iter().any(|b| (first..first + n).contains(b)) {
                Err("EIO".to_string())
            } else {
                Ok(())
            }
        };
        let n = narrow(0, 64 * lbs, lbs, "EIO".into(), &mut op);
        assert_eq!(n.good, 61 * lbs);
        assert_eq!(
            n.bad,
            vec![
                (5 * lbs, 2 * lbs, "EIO".into()),
                (40 * lbs, lbs, "EIO".into())
            ]
        );
        assert_eq!(n.commands, calls);
        // Far fewer commands than one per block.
        assert!(calls < 40, "{calls} commands");
        // A single failing block is not retried again.
        let mut never = |_: u64, _: u64| -> Result<(), String> { panic!("retried") };
        let n = narrow(7 * lbs, lbs, lbs, "EIO".into(), &mut never);
        assert_eq!((n.good, n.bad.len(), n.commands), (0, 1, 0));
    }

    #[test]
    fn odd_lengths_split_on_block_boundaries() {
        // 7 blocks, block 6 bad: every tried range is whole blocks.
        let lbs = 4096u64;
        let op = |o: u64, l: u64| {
            assert_eq!((o % lbs, l % lbs), (0, 0));
            if (o..o + l).contains(&(6 * lbs)) {
                Err("ENODATA".to_string())
            } else {
                Ok(())
            }
        };
        let n = narrow(100 * lbs, 7 * lbs, lbs, "x".into(), &mut |o, l| {
            op(o - 100 * lbs, l)
        });
        assert_eq!(n.bad, vec![(106 * lbs, lbs, "ENODATA".into())]);
        assert_eq!(n.good, 6 * lbs);
    }

    #[test]
    fn aligned_slices_start_on_a_page() {
        let mut v = Vec::new();
        for len in [512usize, 4096, 65536 + 512] {
            let s = aligned(&mut v, len);
            assert_eq!(s.len(), len);
            assert_eq!(s.as_ptr() as usize % 4096, 0);
        }
    }
}
