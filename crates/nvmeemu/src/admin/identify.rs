//! Identify (NVMe Base 1.4, 5.15): the controller (CNS 01h), a namespace
//! (CNS 00h), the active namespace list (CNS 02h), a namespace's
//! identification descriptors (CNS 03h) and the NVM command set's
//! controller data (CNS 06h, CSI 0: no extra limits), each 4096 bytes.
//!
//! The controller data carries what Linux's fabrics host checks before it
//! uses a controller (a controller ID matching the Connect's, keep alive
//! support, the I/O capsule sizes, MAXCMD, SGL support, ICDOFF 0) and what
//! drivelab reads to choose an erase (OACS Format, SANICAP, ONCS, FNA,
//! TNVMCAP / UNVMCAP).

use crate::cmd::{put, Sqe, Status};
use crate::ctrl::{Ctrl, Outcome};
use crate::fabrics::VERSION;

/// Warning composite temperature threshold, kelvin (WCTEMP).
pub const WCTEMP_K: u16 = 343;
/// Critical composite temperature threshold, kelvin (CCTEMP).
pub const CCTEMP_K: u16 = 358;
/// Maximum data transfer: 2^MDTS pages of 4 KiB (128 KiB).
pub const MDTS: u8 = 5;
/// Largest write carried in the command capsule, bytes; larger ones are
/// asked for with R2T.
pub const INLINE_DATA: u32 = 8192;
/// Identify Controller SANICAP: crypto erase, block erase, overwrite.
pub const SANICAP: u32 = 0x7;
/// Identify Controller ONCS: Dataset Management (bit 2), Write Zeroes (bit 3).
pub const ONCS: u16 = 0x0C;

fn ascii(b: &mut [u8], s: &str) {
    b.fill(b' ');
    let n = s.len().min(b.len());
    b[..n].copy_from_slice(&s.as_bytes()[..n]);
}

/// Identify Controller data.
pub fn controller(c: &Ctrl) -> Vec<u8> {
    let mut d = vec![0u8; 4096];
    ascii(&mut d[4..24], &c.cfg.serial);
    ascii(&mut d[24..64], &c.cfg.model);
    ascii(&mut d[64..72], &c.cfg.firmware);
    d[72] = 6; // RAB
    d[77] = MDTS;
    put(&mut d, 78, &c.cntlid.to_le_bytes());
    put(&mut d, 80, &VERSION.to_le_bytes());
    d[111] = 1; // CNTRLTYPE: I/O controller
    put(&mut d, 256, &0x0012u16.to_le_bytes()); // OACS: Format NVM, Device Self-test
    d[258] = 3; // ACL
    d[259] = 3; // AERL
    d[260] = 0x03; // FRMW: slot 1 read-only, one slot
    d[261] = 0x04; // LPA: extended data (offsets) for Get Log Page
    d[262] = (crate::ctrl::ERROR_LOG_ENTRIES - 1) as u8; // ELPE
    put(&mut d, 266, &WCTEMP_K.to_le_bytes());
    put(&mut d, 268, &CCTEMP_K.to_le_bytes());
    let total = u128::from(c.cfg.capacity);
    let unallocated = total.saturating_sub(u128::from(c.allocated_bytes()));
    put(&mut d, 280, &total.to_le_bytes()); // TNVMCAP
    put(&mut d, 296, &unallocated.to_le_bytes()); // UNVMCAP
                                                  // EDSTT: the extended self-test's minutes; DSTO: one test at a time.
    let edstt = c.self_test.extended.as_secs().div_ceil(60).clamp(1, 0xFFFF) as u16;
    put(&mut d, 316, &edstt.to_le_bytes());
    d[318] = 0x01;
    put(&mut d, 320, &10u16.to_le_bytes()); // KAS: 1 s granularity
    put(&mut d, 328, &SANICAP.to_le_bytes());
    d[512] = 0x66; // SQES
    d[513] = 0x44; // CQES
    put(
        &mut d,
        514,
        &((crate::fabrics::MQES + 1) as u16).to_le_bytes(),
    ); // MAXCMD
    put(&mut d, 516, &(c.namespaces.len() as u32).to_le_bytes()); // NN
    put(&mut d, 520, &ONCS.to_le_bytes());
    d[524] = 0x04; // FNA: crypto erase per namespace
    d[525] = 0x01; // VWC: a volatile write cache is present
    put(&mut d, 536, &0x0010_0001u32.to_le_bytes()); // SGLS
    let nqn = c.cfg.subnqn.as_bytes();
    let n = nqn.len().min(255);
    d[768..768 + n].copy_from_slice(&nqn[..n]);
    let ioccsz = (64 + INLINE_DATA) / 16;
    put(&mut d, 1792, &ioccsz.to_le_bytes()); // IOCCSZ
    put(&mut d, 1796, &1u32.to_le_bytes()); // IORCSZ
    d[1803] = 1; // MSDBD
    put(&mut d, 2048, &900u16.to_le_bytes()); // PSD0 MP: 9 W
    d
}

/// A namespace's EUI-64 and NGUID, made from the serial and NSID.
fn ids(c: &Ctrl, nsid: u32) -> ([u8; 8], [u8; 16]) {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for b in c.cfg.serial.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3);
    }
    let eui = (h ^ u64::from(nsid)).to_be_bytes();
    let mut nguid = [0u8; 16];
    nguid[..8].copy_from_slice(&h.to_be_bytes());
    nguid[8..].copy_from_slice(&u64::from(nsid).to_be_bytes());
    (eui, nguid)
}

/// Identify Namespace data for `nsid` (an existing namespace), or the
/// formats common to all (FFFFFFFFh: sizes zero).
fn namespace(c: &mut Ctrl, nsid: u32) -> Vec<u8> {
    let bs = c.cfg.block_size as u64;
    let (eui, nguid) = ids(c, nsid);
    let mut d = vec![0u8; 4096];
    if let Some(m) = c.namespace(nsid) {
        let (size, used) = (m.blocks(), m.mapped_blocks());
        put(&mut d, 0, &size.to_le_bytes()); // NSZE
        put(&mut d, 8, &size.to_le_bytes()); // NCAP
        put(&mut d, 16, &used.to_le_bytes()); // NUSE
        d[24] = 0x01; // NSFEAT: thin provisioning (NUSE is real)
        put(&mut d, 48, &u128::from(size * bs).to_le_bytes()); // NVMCAP
        put(&mut d, 104, &nguid);
        put(&mut d, 120, &eui);
    }
    d[25] = 0; // NLBAF: one format
    d[26] = 0; // FLBAS: format 0
    d[32] = 0x80; // FPI: format progress indicator supported, 0 % left
    d[33] = 0x09; // DLFEAT: deallocated blocks read zeroes; DEAC supported
    put(&mut d, 128, &((bs.trailing_zeros()) << 16).to_le_bytes()); // LBAF0
    d
}

/// The Namespace Identification Descriptor list (CNS 03h): EUI-64,
/// NGUID and the command set (NVM).
fn descriptors(c: &Ctrl, nsid: u32) -> Vec<u8> {
    let (eui, nguid) = ids(c, nsid);
    let mut d = vec![0u8; 4096];
    let mut at = 0;
    for (nidt, nid) in [(1u8, &eui[..]), (2, &nguid[..]), (4, &[0u8][..])] {
        d[at] = nidt;
        d[at + 1] = nid.len() as u8;
        d[at + 4..at + 4 + nid.len()].copy_from_slice(nid);
        at += 4 + nid.len();
    }
    d
}

/// Executes Identify: CDW10 bits 7:0 CNS, CDW11 bits 31:24 CSI.
pub fn execute(c: &mut Ctrl, sqe: &Sqe) -> Outcome {
    let cns = (sqe.cdw(10) & 0xFF) as u8;
    let nsid = sqe.nsid();
    let count = c.namespaces.len() as u32;
    let exists = (1..=count).contains(&nsid);
    match cns {
        0x00 if exists || nsid == 0xFFFF_FFFF => Outcome::data(namespace(c, nsid)),
        0x01 => Outcome::data(controller(c)),
        0x02 if nsid < 0xFFFF_FFFE => {
            let mut d = vec![0u8; 4096];
            for (i, n) in (nsid + 1..=count).take(1024).enumerate() {
                put(&mut d, 4 * i, &n.to_le_bytes());
            }
            Outcome::data(d)
        }
        0x03 if exists => Outcome::data(descriptors(c, nsid)),
        0x06 if sqe.cdw(11) >> 24 == 0 => Outcome::data(vec![0u8; 4096]),
        0x00 | 0x02 | 0x03 => Outcome::status(Status::INVALID_NS),
        _ => Outcome::status(Status::INVALID_FIELD),
    }
}
