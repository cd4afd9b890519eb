//! The data the drive returns about itself: standard INQUIRY and the VPD
//! pages (SPC-5 6.7, 7.7), READ CAPACITY (SBC-4 5.20, 5.21), mode pages
//! (SPC-5 7.5, SBC-4 6.5) and REPORT LUNS (SPC-5 6.33), built from
//! [`Identity`] and the medium's geometry.

/// Who the drive says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// T10 vendor identification (8 characters, space padded).
    pub vendor: String,
    /// Product identification (16).
    pub product: String,
    /// Product revision level (4).
    pub revision: String,
    /// Unit serial number (VPD 80h).
    pub serial: String,
}

/// The medium's shape as the initiator sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Logical blocks.
    pub blocks: u64,
    /// Bytes per logical block.
    pub block_size: u32,
    /// Most blocks in one READ or WRITE (VPD B0h).
    pub max_transfer_blocks: u32,
}

/// VPD pages this drive returns, in page 00h's order.
pub const VPD_PAGES: &[u8] = &[0x00, 0x80, 0x83, 0xB0, 0xB1, 0xB2];

/// Most blocks one WRITE SAME names (VPD B0h MAXIMUM WRITE SAME LENGTH).
pub const MAX_WRITE_SAME_BLOCKS: u32 = 8192;
/// Most blocks one UNMAP names in all (MAXIMUM UNMAP LBA COUNT).
pub const MAX_UNMAP_BLOCKS: u32 = 8192;
/// Most block descriptors in one UNMAP (MAXIMUM UNMAP BLOCK DESCRIPTOR
/// COUNT).
pub const MAX_UNMAP_DESCRIPTORS: u32 = 16;

fn padded(s: &str, n: usize) -> Vec<u8> {
    let mut v: Vec<u8> = s
        .bytes()
        .filter(|b| (0x20..0x7F).contains(b))
        .take(n)
        .collect();
    v.resize(n, b' ');
    v
}

/// Cut `data` to the allocation length.
pub fn cut(mut data: Vec<u8>, alloc: usize) -> Vec<u8> {
    data.truncate(alloc);
    data
}

/// Standard INQUIRY data (96 bytes): a direct-access block device,
/// SPC-5 (version 07h), response data format 2, CMDQUE.
pub fn standard_inquiry(id: &Identity) -> Vec<u8> {
    let mut d = vec![0u8; 96];
    d[0] = 0x00; // peripheral qualifier 0, device type 00h: direct access
    d[2] = 0x07; // SPC-5
    d[3] = 0x02; // response data format 2
    d[4] = (d.len() - 5) as u8; // additional length
    d[7] = 0x02; // CMDQUE
    d[8..16].copy_from_slice(&padded(&id.vendor, 8));
    d[16..32].copy_from_slice(&padded(&id.product, 16));
    d[32..36].copy_from_slice(&padded(&id.revision, 4));
    d
}

/// The drive's NAA IEEE Registered designator (NAA 5): an OUI of our own
/// (locally administered, 00-14-05 is the kernel's LIO one) and 36 bits
/// from the serial, so two drives with different serials differ.
pub fn naa(id: &Identity) -> [u8; 8] {
    // FNV-1a of the serial, 36 bits of it.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.serial.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let v = (0x5u64 << 60) | (0x0D_1AB0u64 << 36) | (h & 0xF_FFFF_FFFF);
    v.to_be_bytes()
}

/// VPD page `page`, or `None` when the drive has no such page.
pub fn vpd(page: u8, id: &Identity, g: &Geometry) -> Option<Vec<u8>> {
    let body: Vec<u8> = match page {
        0x00 => VPD_PAGES.to_vec(),
        0x80 => id.serial.bytes().collect(),
        0x83 => {
            let mut b = Vec::new();
            // NAA, binary, associated with the logical unit.
            b.extend_from_slice(&[0x01, 0x03, 0x00, 0x08]);
            b.extend_from_slice(&naa(id));
            // T10 vendor ID, ASCII: vendor then serial.
            let t10: Vec<u8> = padded(&id.vendor, 8)
                .into_iter()
                .chain(id.serial.bytes())
                .collect();
            b.extend_from_slice(&[0x02, 0x01, 0x00, t10.len() as u8]);
            b.extend_from_slice(&t10);
            b
        }
        0xB0 => {
            // Block Limits (SBC-4 6.6.4), 60 bytes of page body: the body's
            // index is the page's byte less 4.
            let mut b = vec![0u8; 60];
            b[0] = 0x01; // WSNZ: a WRITE SAME of 0 blocks is refused
                         // Maximum transfer length (bytes 8..12 of the page).
            b[4..8].copy_from_slice(&g.max_transfer_blocks.to_be_bytes());
            // Optimal transfer length.
            b[8..12].copy_from_slice(&g.max_transfer_blocks.to_be_bytes());
            // Maximum unmap LBA count, block descriptor count, optimal
            // unmap granularity (one block), maximum write same length.
            b[16..20].copy_from_slice(&MAX_UNMAP_BLOCKS.to_be_bytes());
            b[20..24].copy_from_slice(&MAX_UNMAP_DESCRIPTORS.to_be_bytes());
            b[24..28].copy_from_slice(&1u32.to_be_bytes());
            b[32..40].copy_from_slice(&u64::from(MAX_WRITE_SAME_BLOCKS).to_be_bytes());
            b
        }
        0xB2 => {
            // Logical Block Provisioning (SBC-4 6.6.6): LBPU, LBPWS,
            // LBPWS10, LBPRZ 001b (an unmapped block reads as zeroes),
            // thin provisioned.
            vec![0x00, 0x80 | 0x40 | 0x20 | 0x04, 0x02, 0x00]
        }
        0xB1 => {
            // Block Device Characteristics (SBC-4 6.6.2): non-rotating,
            // 2.5-inch form factor.
            let mut b = vec![0u8; 60];
            b[0..2].copy_from_slice(&1u16.to_be_bytes());
            b[3] = 0x03;
            b
        }
        _ => return None,
    };
    let mut d = vec![0x00, page];
    d.extend_from_slice(&(body.len() as u16).to_be_bytes());
    d.extend_from_slice(&body);
    Some(d)
}

/// READ CAPACITY (10) data: the last LBA (FFFFFFFFh when it does not
/// fit) and the block length.
pub fn read_capacity_10(g: &Geometry) -> Vec<u8> {
    let last = g.blocks.saturating_sub(1);
    let last = u32::try_from(last).unwrap_or(u32::MAX);
    let mut d = last.to_be_bytes().to_vec();
    d.extend_from_slice(&g.block_size.to_be_bytes());
    d
}

/// READ CAPACITY (16) data (32 bytes): no protection, one logical block
/// per physical block; LBPME (provisioning management: UNMAP and WRITE
/// SAME with UNMAP) and LBPRZ (an unmapped block reads as zeroes).
pub fn read_capacity_16(g: &Geometry) -> Vec<u8> {
    let mut d = vec![0u8; 32];
    d[0..8].copy_from_slice(&g.blocks.saturating_sub(1).to_be_bytes());
    d[8..12].copy_from_slice(&g.block_size.to_be_bytes());
    d[14] = 0x80 | 0x40;
    d
}

/// Mode pages for MODE SENSE: Caching (08h, write cache enabled),
/// Control (0Ah, D_SENSE 0) and Informational Exceptions Control (1Ch,
/// SPC-5 7.5.11: exceptions enabled (DEXCPT 0), MRIE 6: reported only on
/// request, i.e. in log page 2Fh); `None` for a page this drive lacks. PC 1
/// (changeable) reports nothing changeable.
fn mode_page(page: u8, pc: u8) -> Option<Vec<u8>> {
    let changeable = pc == 1;
    match page {
        0x08 => {
            let mut p = vec![0u8; 20];
            p[0] = 0x08;
            p[1] = 18;
            if !changeable {
                p[2] = 0x04; // WCE
            }
            Some(p)
        }
        0x0A => {
            let mut p = vec![0u8; 12];
            p[0] = 0x0A;
            p[1] = 10;
            if !changeable {
                p[8..10].copy_from_slice(&0xFFFFu16.to_be_bytes()); // busy timeout
            }
            Some(p)
        }
        0x1C => {
            let mut p = vec![0u8; 12];
            p[0] = 0x1C;
            p[1] = 10;
            if !changeable {
                p[3] = 0x06; // MRIE: only report on request
            }
            Some(p)
        }
        _ => None,
    }
}

/// MODE SENSE (6) or (10) data: header, an 8-byte block descriptor
/// unless DBD, then the page(s) asked for (3Fh: all). `None` for a page
/// or subpage the drive does not have.
pub fn mode_sense(
    ten: bool,
    dbd: bool,
    pc: u8,
    page: u8,
    subpage: u8,
    g: &Geometry,
) -> Option<Vec<u8>> {
    if subpage != 0 && subpage != 0xFF {
        return None;
    }
    let pages: Vec<u8> = if page == 0x3F {
        [0x08, 0x0A, 0x1C]
            .iter()
            .filter_map(|p| mode_page(*p, pc))
            .flatten()
            .collect()
    } else {
        mode_page(page, pc)?
    };
    let mut bd = Vec::new();
    if !dbd {
        bd.extend_from_slice(&u32::try_from(g.blocks).unwrap_or(u32::MAX).to_be_bytes());
        bd.extend_from_slice(&(g.block_size & 0x00FF_FFFF).to_be_bytes());
    }
    let mut d = if ten {
        let mut h = vec![0u8; 8];
        h[6..8].copy_from_slice(&(bd.len() as u16).to_be_bytes());
        h
    } else {
        vec![0, 0, 0, bd.len() as u8]
    };
    d.extend_from_slice(&bd);
    d.extend_from_slice(&pages);
    // Mode data length: the bytes after the length field itself.
    if ten {
        let n = (d.len() - 2) as u16;
        d[0..2].copy_from_slice(&n.to_be_bytes());
    } else {
        d[0] = (d.len() - 1) as u8;
    }
    Some(d)
}

/// REPORT LUNS data: one LUN, 0.
pub fn report_luns() -> Vec<u8> {
    let mut d = vec![0u8; 16];
    d[0..4].copy_from_slice(&8u32.to_be_bytes());
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> Identity {
        Identity {
            vendor: "DRIVELAB".into(),
            product: "TCMU SAS".into(),
            revision: "0.1".into(),
            serial: "DLTCMU0001".into(),
        }
    }

    const G: Geometry = Geometry {
        blocks: 32768,
        block_size: 512,
        max_transfer_blocks: 2048,
    };

    #[test]
    fn standard_inquiry_pads_identity_fields() {
        let d = standard_inquiry(&id());
        assert_eq!(&d[8..16], b"DRIVELAB");
        assert_eq!(&d[16..32], b"TCMU SAS        ");
        assert_eq!(&d[32..36], b"0.1 ");
        assert_eq!(d[4] as usize + 5, d.len());
    }

    #[test]
    fn vpd_pages_have_their_code_and_length() {
        for &p in VPD_PAGES {
            let d = vpd(p, &id(), &G).expect("listed page");
            assert_eq!(d[1], p);
            assert_eq!(
                u16::from_be_bytes([d[2], d[3]]) as usize + 4,
                d.len(),
                "{p:02x}"
            );
        }
        assert_eq!(&vpd(0x80, &id(), &G).unwrap()[4..], b"DLTCMU0001");
        assert_eq!(vpd(0x00, &id(), &G).unwrap()[4..], *VPD_PAGES);
        let b0 = vpd(0xB0, &id(), &G).unwrap();
        assert_eq!(u32::from_be_bytes([b0[8], b0[9], b0[10], b0[11]]), 2048);
        assert!(vpd(0x89, &id(), &G).is_none());
        let other = Identity {
            serial: "DLTCMU0002".into(),
            ..id()
        };
        assert_ne!(naa(&id()), naa(&other));
        assert_eq!(naa(&id())[0] >> 4, 5);
    }

    #[test]
    fn provisioning_pages_are_read_back_by_drivelab() {
        use drivelab_device::scsi::{BlockLimits, Capacity, LogicalBlockProvisioning};
        let b0 = BlockLimits::parse(&vpd(0xB0, &id(), &G).unwrap()).expect("B0h");
        assert!(b0.wsnz);
        assert_eq!(b0.max_transfer_length, 2048);
        assert_eq!(b0.max_write_same_length, u64::from(MAX_WRITE_SAME_BLOCKS));
        assert_eq!(b0.max_unmap_lba_count, MAX_UNMAP_BLOCKS);
        assert_eq!(b0.max_unmap_descriptors, MAX_UNMAP_DESCRIPTORS);
        let b2 = LogicalBlockProvisioning::parse(&vpd(0xB2, &id(), &G).unwrap()).expect("B2h");
        assert!(b2.lbpu && b2.lbpws && b2.lbpws10 && !b2.anc_sup);
        assert_eq!((b2.lbprz, b2.provisioning_type), (1, 2));
        let c = Capacity::parse16(&read_capacity_16(&G)).expect("RC16");
        assert!(c.lbpme && c.lbprz);
    }

    #[test]
    fn capacity_is_the_last_lba_and_block_length() {
        assert_eq!(read_capacity_10(&G), [0, 0, 0x7F, 0xFF, 0, 0, 2, 0]);
        let big = Geometry {
            blocks: 1 << 33,
            ..G
        };
        assert_eq!(&read_capacity_10(&big)[..4], &[0xFF; 4]);
        let d = read_capacity_16(&big);
        assert_eq!(&d[..8], &((1u64 << 33) - 1).to_be_bytes());
        assert_eq!(&d[8..12], &512u32.to_be_bytes());
    }

    #[test]
    fn mode_sense_lengths_and_descriptors() {
        // (6), all pages, with block descriptor: 4 + 8 + 20 + 12 + 12.
        let d = mode_sense(false, false, 0, 0x3F, 0, &G).unwrap();
        assert_eq!(d.len(), 56);
        assert_eq!(d[0] as usize, 55);
        assert_eq!(
            (d[44], d[46] & 0x08, d[47]),
            (0x1C, 0, 0x06),
            "IE control: enabled, MRIE 6"
        );
        assert_eq!(d[3], 8);
        assert_eq!(&d[4..8], &32768u32.to_be_bytes());
        assert_eq!(d[12], 0x08);
        assert_eq!(d[14] & 0x04, 0x04, "write cache enabled");
        // (10), caching only, no descriptor.
        let d = mode_sense(true, true, 0, 0x08, 0, &G).unwrap();
        assert_eq!(d.len(), 28);
        assert_eq!(u16::from_be_bytes([d[0], d[1]]), 26);
        assert_eq!(&d[6..8], &[0, 0]);
        // Changeable values: nothing changeable.
        let d = mode_sense(false, true, 1, 0x08, 0, &G).unwrap();
        assert_eq!(d[4 + 2], 0);
        assert!(mode_sense(false, false, 0, 0x19, 0, &G).is_none());
        assert!(mode_sense(false, false, 0, 0x08, 0x01, &G).is_none());
    }
}
