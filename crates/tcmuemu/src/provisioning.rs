//! WRITE SAME (10/16) and UNMAP (SBC-4 5.45, 5.46, 5.32) as the drive
//! takes them: what a command asks of the medium, checked against the
//! limits VPD B0h advertises ([`crate::pages`]) before anything changes.
//! The drive is thin provisioned with LBPRZ 001b: an unmapped block reads
//! as zeroes, and the medium holds zeroes there (no map is kept).

use crate::format::INVALID_PARAMETER;
use crate::pages::{MAX_UNMAP_BLOCKS, MAX_UNMAP_DESCRIPTORS, MAX_WRITE_SAME_BLOCKS};
use crate::sense::Sense;

/// What a WRITE SAME does to its blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SameAction {
    /// Write this block to each.
    Write(Vec<u8>),
    /// Unmap them (UNMAP set and a block of zeroes, or NDOB).
    Unmap,
}

/// A WRITE SAME of `blocks` at `lba` on a drive of `capacity` blocks of
/// `block_size` bytes, with its data-out `data`.
pub fn write_same(
    lba: u64,
    blocks: u32,
    unmap: bool,
    ndob: bool,
    data: &[u8],
    capacity: u64,
    block_size: usize,
) -> Result<SameAction, Sense> {
    // WSNZ: a count of zero is refused, as is one above the maximum.
    if blocks == 0 || blocks > MAX_WRITE_SAME_BLOCKS {
        return Err(Sense::INVALID_FIELD_IN_CDB);
    }
    if lba
        .checked_add(u64::from(blocks))
        .is_none_or(|e| e > capacity)
    {
        return Err(Sense::LBA_OUT_OF_RANGE);
    }
    let block = if ndob {
        vec![0u8; block_size]
    } else {
        data.get(..block_size)
            .ok_or(Sense::PARAMETER_LIST_LENGTH)?
            .to_vec()
    };
    // With UNMAP the blocks may be unmapped when that reads back as the
    // block sent: zeroes, as LBPRZ says (SBC-4 4.7.3.4).
    if unmap && block.iter().all(|&b| b == 0) {
        Ok(SameAction::Unmap)
    } else {
        Ok(SameAction::Write(block))
    }
}

/// The ranges (first block, blocks) of an UNMAP parameter list of `len`
/// bytes (SBC-4 5.32.2: an 8-byte header, then 16-byte block
/// descriptors), checked against the drive's limits and `capacity`.
pub fn unmap_ranges(len: usize, data: &[u8], capacity: u64) -> Result<Vec<(u64, u64)>, Sense> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let list = data.get(..len).ok_or(Sense::PARAMETER_LIST_LENGTH)?;
    if len < 8 {
        return Err(Sense::PARAMETER_LIST_LENGTH);
    }
    let bdl = usize::from(u16::from_be_bytes([list[2], list[3]]));
    if bdl % 16 != 0 || 8 + bdl > len {
        return Err(INVALID_PARAMETER);
    }
    let descriptors: Vec<(u64, u64)> = list[8..8 + bdl]
        .chunks_exact(16)
        .map(|d| {
            let mut l = [0u8; 8];
            l.copy_from_slice(&d[..8]);
            let n = u32::from_be_bytes([d[8], d[9], d[10], d[11]]);
            (u64::from_be_bytes(l), u64::from(n))
        })
        .collect();
    let total: u64 = descriptors.iter().map(|d| d.1).sum();
    if descriptors.len() > MAX_UNMAP_DESCRIPTORS as usize || total > u64::from(MAX_UNMAP_BLOCKS) {
        return Err(INVALID_PARAMETER);
    }
    if descriptors
        .iter()
        .any(|&(l, n)| l.checked_add(n).is_none_or(|e| e > capacity))
    {
        return Err(Sense::LBA_OUT_OF_RANGE);
    }
    Ok(descriptors.into_iter().filter(|d| d.1 > 0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_device::scsi::UnmapParameterList;
    use drivelab_device::units::Lba;

    #[test]
    fn write_same_writes_or_unmaps_as_its_bits_and_block_say() {
        let a5 = vec![0xA5u8; 512];
        let z = vec![0u8; 512];
        // (lba, blocks, UNMAP, NDOB, data-out, what the drive does)
        type Case<'a> = (u64, u32, bool, bool, &'a [u8], Result<SameAction, Sense>);
        let cases: &[Case] = &[
            (0, 8, false, false, &a5, Ok(SameAction::Write(a5.clone()))),
            // UNMAP with a block that is not zeroes: written.
            (0, 8, true, false, &a5, Ok(SameAction::Write(a5.clone()))),
            (0, 8, true, false, &z, Ok(SameAction::Unmap)),
            (0, 8, true, true, &[], Ok(SameAction::Unmap)),
            // NDOB without UNMAP: zeroes written.
            (0, 8, false, true, &[], Ok(SameAction::Write(z.clone()))),
            (0, 0, false, false, &a5, Err(Sense::INVALID_FIELD_IN_CDB)),
            (
                0,
                MAX_WRITE_SAME_BLOCKS + 1,
                false,
                false,
                &a5,
                Err(Sense::INVALID_FIELD_IN_CDB),
            ),
            (1000, 25, false, false, &a5, Err(Sense::LBA_OUT_OF_RANGE)),
            (
                0,
                1,
                false,
                false,
                &a5[..100],
                Err(Sense::PARAMETER_LIST_LENGTH),
            ),
        ];
        for (lba, n, unmap, ndob, data, want) in cases {
            assert_eq!(
                &write_same(*lba, *n, *unmap, *ndob, data, 1024, 512),
                want,
                "{lba} {n} {unmap} {ndob}"
            );
        }
    }

    #[test]
    fn drivelabs_unmap_lists_are_read_and_checked() {
        let list = UnmapParameterList::new()
            .range(Lba(16), 32)
            .range(Lba(100), 0)
            .range(Lba(1000), 24)
            .build();
        assert_eq!(
            unmap_ranges(list.len(), &list, 1024),
            Ok(vec![(16, 32), (1000, 24)])
        );
        // Past the end, too many blocks, too many descriptors, short.
        let past = UnmapParameterList::new().range(Lba(1000), 25).build();
        assert_eq!(
            unmap_ranges(past.len(), &past, 1024),
            Err(Sense::LBA_OUT_OF_RANGE)
        );
        let big = UnmapParameterList::new()
            .range(Lba(0), MAX_UNMAP_BLOCKS + 1)
            .build();
        assert_eq!(
            unmap_ranges(big.len(), &big, 1 << 20),
            Err(INVALID_PARAMETER)
        );
        let mut many = UnmapParameterList::new();
        for i in 0..=MAX_UNMAP_DESCRIPTORS {
            many = many.range(Lba(u64::from(i)), 1);
        }
        let many = many.build();
        assert_eq!(
            unmap_ranges(many.len(), &many, 1024),
            Err(INVALID_PARAMETER)
        );
        assert_eq!(
            unmap_ranges(list.len(), &list[..20], 1024),
            Err(Sense::PARAMETER_LIST_LENGTH)
        );
        assert_eq!(unmap_ranges(0, &[], 1024), Ok(vec![]));
    }
}
