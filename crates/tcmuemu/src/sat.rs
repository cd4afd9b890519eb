//! SCSI / ATA Translation (SAT-4) for the SATA personality: ATA
//! PASS-THROUGH (12) and (16) decoded into an ATA taskfile (SAT-4 12.2.2,
//! 12.2.3), and an ATA command's outcome encoded back as the SATL does:
//! GOOD, or with CK_COND or an ATA error, CHECK CONDITION with descriptor
//! sense carrying the ATA Status Return descriptor (SAT-4 12.2.2.7).

use crate::ata::regs::{Regs, STATUS_DRDY};
use crate::sense::Sense;

/// The PROTOCOL field (SAT-4 table 155).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// 3: non-data.
    NonData,
    /// 4: PIO data-in.
    PioIn,
    /// 5: PIO data-out.
    PioOut,
    /// 6: DMA.
    Dma,
    /// Anything else (hard reset, DMA queued, device diagnostic, UDMA...).
    Other(u8),
}

/// A decoded ATA PASS-THROUGH CDB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassThrough {
    /// PROTOCOL.
    pub protocol: Protocol,
    /// EXTEND: a 48-bit command.
    pub extend: bool,
    /// CK_COND: return the registers even on success.
    pub ck_cond: bool,
    /// T_DIR: data to the initiator.
    pub t_dir_in: bool,
    /// The taskfile.
    pub tf: Regs,
}

fn protocol(code: u8) -> Protocol {
    match code {
        3 => Protocol::NonData,
        4 => Protocol::PioIn,
        5 => Protocol::PioOut,
        6 => Protocol::Dma,
        other => Protocol::Other(other),
    }
}

impl PassThrough {
    /// Decode ATA PASS-THROUGH (16) (85h) or (12) (A1h).
    pub fn parse(b: &[u8]) -> Result<PassThrough, Sense> {
        match b.first() {
            Some(0x85) if b.len() >= 16 => {
                let extend = b[1] & 1 != 0;
                let hi = |x: u8| if extend { x } else { 0 };
                Ok(PassThrough {
                    protocol: protocol((b[1] >> 1) & 0x0F),
                    extend,
                    ck_cond: b[2] & 0x20 != 0,
                    t_dir_in: b[2] & 0x08 != 0,
                    tf: Regs {
                        feature: u16::from_be_bytes([hi(b[3]), b[4]]),
                        count: u16::from_be_bytes([hi(b[5]), b[6]]),
                        lba: u64::from(b[8])
                            | (u64::from(b[10]) << 8)
                            | (u64::from(b[12]) << 16)
                            | (u64::from(hi(b[7])) << 24)
                            | (u64::from(hi(b[9])) << 32)
                            | (u64::from(hi(b[11])) << 40),
                        device: b[13],
                        command: b[14],
                    },
                })
            }
            Some(0xA1) if b.len() >= 12 => Ok(PassThrough {
                protocol: protocol((b[1] >> 1) & 0x0F),
                extend: false,
                ck_cond: b[2] & 0x20 != 0,
                t_dir_in: b[2] & 0x08 != 0,
                tf: Regs {
                    feature: u16::from(b[3]),
                    count: u16::from(b[4]),
                    lba: u64::from(b[5]) | (u64::from(b[6]) << 8) | (u64::from(b[7]) << 16),
                    device: b[8],
                    command: b[9],
                },
            }),
            _ => Err(Sense::INVALID_FIELD_IN_CDB),
        }
    }
}

/// The ATA Status Return descriptor (14 bytes) for outcome `r`, with
/// `error` in ERROR and `r.command` as STATUS.
pub fn status_descriptor(r: &Regs, extend: bool, error: u8) -> [u8; 14] {
    let l = r.lba.to_le_bytes();
    let c = r.count.to_be_bytes();
    [
        0x09,
        0x0C,
        u8::from(extend),
        error,
        c[0],
        c[1],
        l[3],
        l[0],
        l[4],
        l[1],
        l[5],
        l[2],
        r.device,
        r.command,
    ]
}

/// Descriptor-format sense (72h) with one ATA Status Return descriptor:
/// RECOVERED ERROR 00h/1Dh (ATA PASS-THROUGH INFORMATION AVAILABLE) for a
/// CK_COND success, ABORTED COMMAND 00h/1Dh for an ATA error.
pub fn sense(desc: &[u8; 14], failed: bool) -> Vec<u8> {
    let key = if failed { 0x0B } else { 0x01 };
    let mut s = vec![0x72, key, 0x00, 0x1D, 0, 0, 0, desc.len() as u8];
    s.extend_from_slice(desc);
    s
}

/// VPD page 89h, ATA Information (SAT-4 12.4.2): the SATL's identity,
/// the device signature and the IDENTIFY DEVICE data (572 bytes).
pub fn vpd89(a: &crate::ata::Ata) -> Vec<u8> {
    let mut d = vec![0u8; 572];
    d[1] = 0x89;
    d[2..4].copy_from_slice(&568u16.to_be_bytes());
    d[8..16].copy_from_slice(b"DRIVELAB");
    d[16..32].copy_from_slice(b"TCMU SATL       ");
    d[32..36].copy_from_slice(b"1.0 ");
    // Device signature: a Register Device-to-Host FIS of an ATA device.
    d[36] = 0x34;
    d[38] = STATUS_DRDY;
    d[40] = 0x01; // LBA 7:0 and COUNT 1: the ATA signature
    d[48] = 0x01;
    d[56] = crate::ata::command::IDENTIFY_DEVICE;
    d[60..572].copy_from_slice(&crate::ata::identify::build(a));
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ata::regs::ERROR_ABRT;
    use drivelab_device::ata::{AtaPassThrough, Protocol as P, Taskfile};

    #[test]
    fn what_drivelab_builds_decodes_to_the_same_registers() {
        let cases = [
            (
                AtaPassThrough::new(P::PioDataIn, Taskfile::new(0xEC).count(1)),
                Protocol::PioIn,
            ),
            (
                AtaPassThrough::new(P::NonData, Taskfile::new(0x27).device(0x40))
                    .extend(true)
                    .ck_cond(true),
                Protocol::NonData,
            ),
            (
                AtaPassThrough::new(
                    P::NonData,
                    Taskfile::new(0x37)
                        .lba(0x0000_1234_5678_9ABC)
                        .count(0x0102)
                        .feature(0x0304),
                )
                .extend(true),
                Protocol::NonData,
            ),
            (
                AtaPassThrough::new(P::PioDataOut, Taskfile::new(0xF1).count(1)).ck_cond(true),
                Protocol::PioOut,
            ),
        ];
        for (pt, proto) in cases {
            let t = pt.taskfile();
            let want = Regs {
                feature: t.feature,
                count: t.count,
                lba: t.lba,
                device: t.device,
                command: t.command,
            };
            let d = PassThrough::parse(&pt.build16()).expect("16");
            assert_eq!((d.tf, d.protocol), (want, proto), "{:02x?}", pt.build16());
            if let Some(c12) = pt.build12() {
                let d = PassThrough::parse(&c12).expect("12");
                assert_eq!(d.tf, want, "{c12:02x?}");
            }
        }
    }

    #[test]
    fn status_return_descriptor_is_read_back_by_drivelab() {
        let r = Regs {
            feature: 0,
            count: 0x00AB,
            lba: 0x0000_00C2_4F00,
            device: 0x40,
            command: STATUS_DRDY,
        };
        let s = sense(&status_descriptor(&r, true, 0), false);
        let parsed = drivelab_device::scsi::sense::Sense::parse(&s).expect("sense");
        let a = parsed.ata.expect("descriptor 09h");
        assert_eq!(
            (a.status, a.error, a.count, a.lba),
            (0x40, 0, 0xAB, 0xC24F00)
        );
        assert_eq!(parsed.key, 0x01);
        let f = sense(&status_descriptor(&r, false, ERROR_ABRT), true);
        let parsed = drivelab_device::scsi::sense::Sense::parse(&f).expect("sense");
        assert_eq!(parsed.key, 0x0B);
        assert_eq!(parsed.ata.map(|a| a.error), Some(ERROR_ABRT));
    }
}
