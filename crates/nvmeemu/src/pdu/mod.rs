//! NVMe/TCP PDUs (NVMe/TCP Transport Specification 1.0, section 3.6): the
//! 8-byte common header and each PDU type the emulated controller sends or
//! takes, encoded and decoded at the spec's byte offsets.
//!
//! Header and data digests are never negotiated (the controller answers an
//! ICReq asking for them with digests off, and Linux then refuses the
//! connection rather than run without them), so a PDU with a digest flag is
//! a protocol error here. In-capsule and PDU data start at the header's
//! PDU Data Offset (PDO) and run to its PDU Length (PLEN).

use std::io::Read;

use crate::cmd::{Cqe, Sqe};

/// PDU types (Figure "PDU Type Values").
pub mod kind {
    /// Initialize Connection Request.
    pub const IC_REQ: u8 = 0x00;
    /// Initialize Connection Response.
    pub const IC_RESP: u8 = 0x01;
    /// Host to Controller Terminate Connection Request.
    pub const H2C_TERM_REQ: u8 = 0x02;
    /// Controller to Host Terminate Connection Request.
    pub const C2H_TERM_REQ: u8 = 0x03;
    /// Command Capsule.
    pub const CAPSULE_CMD: u8 = 0x04;
    /// Response Capsule.
    pub const CAPSULE_RESP: u8 = 0x05;
    /// Host to Controller Data.
    pub const H2C_DATA: u8 = 0x06;
    /// Controller to Host Data.
    pub const C2H_DATA: u8 = 0x07;
    /// Ready to Transfer.
    pub const R2T: u8 = 0x09;
}

/// Common header flags.
pub mod flag {
    /// Header digest present.
    pub const HDGSTF: u8 = 0x01;
    /// Data digest present.
    pub const DDGSTF: u8 = 0x02;
    /// Last data PDU of a command (H2CData, C2HData).
    pub const LAST_PDU: u8 = 0x04;
    /// C2HData: the command succeeded, no response capsule follows.
    pub const SUCCESS: u8 = 0x08;
}

/// The common header's length.
pub const CH_LEN: usize = 8;
/// PDU Format Version 1.0.
pub const PFV_1_0: u16 = 0;
/// The largest PDU this side accepts (a 128 KiB write plus headers, with
/// room to spare).
pub const MAX_PDU: u32 = 1 << 22;

/// A malformed or unexpected PDU, or the connection failing.
#[derive(Debug, thiserror::Error)]
pub enum PduError {
    /// The socket failed or closed.
    #[error("connection: {0}")]
    Io(#[from] std::io::Error),
    /// A header field is wrong for the PDU's type.
    #[error("PDU type {pdu_type:#04x}: {what}")]
    Header {
        /// The PDU type.
        pdu_type: u8,
        /// What is wrong.
        what: String,
    },
    /// A PDU type this side never takes.
    #[error("unexpected PDU type {0:#04x}")]
    Unexpected(u8),
}

/// One PDU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pdu {
    /// ICReq: PFV, host PDU data alignment, digests asked, MAXR2T (0's based).
    IcReq {
        /// PDU format version.
        pfv: u16,
        /// Host PDU Data Alignment.
        hpda: u8,
        /// Bit 0 header digest, bit 1 data digest.
        digest: u8,
        /// Maximum outstanding R2Ts per command, 0's based.
        maxr2t: u32,
    },
    /// ICResp.
    IcResp {
        /// PDU format version.
        pfv: u16,
        /// Controller PDU Data Alignment.
        cpda: u8,
        /// Digests enabled.
        digest: u8,
        /// Maximum bytes of one H2CData PDU.
        maxh2cdata: u32,
    },
    /// H2CTermReq or C2HTermReq: fatal error status and information.
    TermReq {
        /// True for C2HTermReq.
        from_controller: bool,
        /// Fatal Error Status.
        fes: u16,
        /// Fatal Error Information.
        fei: u32,
    },
    /// A command capsule with any in-capsule data.
    CapsuleCmd {
        /// The submission queue entry.
        sqe: Sqe,
        /// In-capsule data.
        data: Vec<u8>,
    },
    /// A response capsule.
    CapsuleResp {
        /// The completion queue entry.
        cqe: Cqe,
    },
    /// H2CData.
    H2CData {
        /// Command Capsule CID.
        cccid: u16,
        /// Transfer tag from the R2T.
        ttag: u16,
        /// Data offset in the command's data.
        datao: u32,
        /// Last PDU of the transfer.
        last: bool,
        /// The data.
        data: Vec<u8>,
    },
    /// C2HData.
    C2HData {
        /// Command Capsule CID.
        cccid: u16,
        /// Data offset in the command's data.
        datao: u32,
        /// Last PDU of the command's data.
        last: bool,
        /// The command succeeded, no response capsule follows.
        success: bool,
        /// The data.
        data: Vec<u8>,
    },
    /// R2T: asks the host for `r2tl` bytes at `r2to` of command `cccid`.
    R2T {
        /// Command Capsule CID.
        cccid: u16,
        /// Transfer tag the host's H2CData PDUs carry.
        ttag: u16,
        /// Offset of the data asked for.
        r2to: u32,
        /// Length of the data asked for.
        r2tl: u32,
    },
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn get16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn get32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The PDU's type, header length, and its data (if any).
fn layout(p: &Pdu) -> (u8, usize, &[u8]) {
    match p {
        Pdu::IcReq { .. } => (kind::IC_REQ, 128, &[]),
        Pdu::IcResp { .. } => (kind::IC_RESP, 128, &[]),
        Pdu::TermReq {
            from_controller, ..
        } => (
            if *from_controller {
                kind::C2H_TERM_REQ
            } else {
                kind::H2C_TERM_REQ
            },
            24,
            &[],
        ),
        Pdu::CapsuleCmd { data, .. } => (kind::CAPSULE_CMD, 72, data),
        Pdu::CapsuleResp { .. } => (kind::CAPSULE_RESP, 24, &[]),
        Pdu::H2CData { data, .. } => (kind::H2C_DATA, 24, data),
        Pdu::C2HData { data, .. } => (kind::C2H_DATA, 24, data),
        Pdu::R2T { .. } => (kind::R2T, 24, &[]),
    }
}

impl Pdu {
    /// The PDU's bytes: common header, PDU specific header, data.
    pub fn encode(&self) -> Vec<u8> {
        let (t, hlen, data) = layout(self);
        let plen = hlen + data.len();
        let mut b = vec![0u8; plen];
        b[0] = t;
        b[2] = hlen as u8;
        b[3] = if data.is_empty() { 0 } else { hlen as u8 };
        put32(&mut b, 4, plen as u32);
        match self {
            Pdu::IcReq {
                pfv,
                hpda,
                digest,
                maxr2t,
            } => {
                put16(&mut b, 8, *pfv);
                b[10] = *hpda;
                b[11] = *digest;
                put32(&mut b, 12, *maxr2t);
            }
            Pdu::IcResp {
                pfv,
                cpda,
                digest,
                maxh2cdata,
            } => {
                put16(&mut b, 8, *pfv);
                b[10] = *cpda;
                b[11] = *digest;
                put32(&mut b, 12, *maxh2cdata);
            }
            Pdu::TermReq { fes, fei, .. } => {
                put16(&mut b, 8, *fes);
                put32(&mut b, 10, *fei);
            }
            Pdu::CapsuleCmd { sqe, .. } => b[8..72].copy_from_slice(&sqe.0),
            Pdu::CapsuleResp { cqe } => b[8..24].copy_from_slice(&cqe.encode()),
            Pdu::H2CData {
                cccid,
                ttag,
                datao,
                last,
                data,
            } => {
                b[1] = if *last { flag::LAST_PDU } else { 0 };
                put16(&mut b, 8, *cccid);
                put16(&mut b, 10, *ttag);
                put32(&mut b, 12, *datao);
                put32(&mut b, 16, data.len() as u32);
            }
            Pdu::C2HData {
                cccid,
                datao,
                last,
                success,
                data,
            } => {
                b[1] = (if *last { flag::LAST_PDU } else { 0 })
                    | (if *success { flag::SUCCESS } else { 0 });
                put16(&mut b, 8, *cccid);
                put32(&mut b, 12, *datao);
                put32(&mut b, 16, data.len() as u32);
            }
            Pdu::R2T {
                cccid,
                ttag,
                r2to,
                r2tl,
            } => {
                put16(&mut b, 8, *cccid);
                put16(&mut b, 10, *ttag);
                put32(&mut b, 12, *r2to);
                put32(&mut b, 16, *r2tl);
            }
        }
        b[hlen..].copy_from_slice(data);
        b
    }

    /// Reads one PDU from `r`.
    pub fn read_from(r: &mut impl Read) -> Result<Pdu, PduError> {
        let mut ch = [0u8; CH_LEN];
        r.read_exact(&mut ch)?;
        let (t, flags, hlen, pdo, plen) = (ch[0], ch[1], ch[2], ch[3], get32(&ch, 4));
        let bad = |what: String| PduError::Header { pdu_type: t, what };
        let want_hlen = match t {
            kind::IC_REQ | kind::IC_RESP => 128,
            kind::H2C_TERM_REQ | kind::C2H_TERM_REQ => 24,
            kind::CAPSULE_CMD => 72,
            kind::CAPSULE_RESP | kind::H2C_DATA | kind::C2H_DATA | kind::R2T => 24,
            other => return Err(PduError::Unexpected(other)),
        };
        if usize::from(hlen) != want_hlen {
            return Err(bad(format!("HLEN {hlen}, the type's is {want_hlen}")));
        }
        if flags & (flag::HDGSTF | flag::DDGSTF) != 0 {
            return Err(bad("digests were not negotiated".into()));
        }
        if plen < u32::from(hlen) || plen > MAX_PDU {
            return Err(bad(format!("PLEN {plen} outside {hlen}..={MAX_PDU}")));
        }
        let has_data = plen > u32::from(hlen);
        if has_data && (u32::from(pdo) < u32::from(hlen) || u32::from(pdo) > plen) {
            return Err(bad(format!("PDO {pdo} outside HLEN {hlen}..=PLEN {plen}")));
        }
        let mut rest = vec![0u8; plen as usize - CH_LEN];
        r.read_exact(&mut rest)?;
        let mut b = ch.to_vec();
        b.extend_from_slice(&rest);
        let data = if has_data {
            b[usize::from(pdo)..].to_vec()
        } else {
            Vec::new()
        };
        Ok(match t {
            kind::IC_REQ => Pdu::IcReq {
                pfv: get16(&b, 8),
                hpda: b[10],
                digest: b[11],
                maxr2t: get32(&b, 12),
            },
            kind::IC_RESP => Pdu::IcResp {
                pfv: get16(&b, 8),
                cpda: b[10],
                digest: b[11],
                maxh2cdata: get32(&b, 12),
            },
            kind::H2C_TERM_REQ | kind::C2H_TERM_REQ => Pdu::TermReq {
                from_controller: t == kind::C2H_TERM_REQ,
                fes: get16(&b, 8),
                fei: get32(&b, 10),
            },
            kind::CAPSULE_CMD => {
                let mut sqe = [0u8; 64];
                sqe.copy_from_slice(&b[8..72]);
                Pdu::CapsuleCmd {
                    sqe: Sqe(sqe),
                    data,
                }
            }
            kind::CAPSULE_RESP => {
                let mut c = [0u8; 16];
                c.copy_from_slice(&b[8..24]);
                Pdu::CapsuleResp {
                    cqe: Cqe::decode(&c),
                }
            }
            kind::H2C_DATA | kind::C2H_DATA => {
                let datal = get32(&b, 16);
                if datal as usize != data.len() {
                    return Err(bad(format!(
                        "DATAL {datal} but {} bytes of data",
                        data.len()
                    )));
                }
                let last = flags & flag::LAST_PDU != 0;
                if t == kind::H2C_DATA {
                    Pdu::H2CData {
                        cccid: get16(&b, 8),
                        ttag: get16(&b, 10),
                        datao: get32(&b, 12),
                        last,
                        data,
                    }
                } else {
                    Pdu::C2HData {
                        cccid: get16(&b, 8),
                        datao: get32(&b, 12),
                        last,
                        success: flags & flag::SUCCESS != 0,
                        data,
                    }
                }
            }
            _ => Pdu::R2T {
                cccid: get16(&b, 8),
                ttag: get16(&b, 10),
                r2to: get32(&b, 12),
                r2tl: get32(&b, 16),
            },
        })
    }
}

/// Fatal Error Status values of a C2HTermReq.
pub mod fes {
    /// Invalid PDU Header Field.
    pub const INVALID_HEADER: u16 = 0x01;
    /// PDU Sequence Error.
    pub const SEQUENCE: u16 = 0x02;
    /// Data Transfer Out of Range.
    pub const OUT_OF_RANGE: u16 = 0x05;
    /// Invalid Parameter (e.g. digests asked for).
    pub const INVALID_PARAMETER: u16 = 0x07;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::Status;

    fn round_trip(p: Pdu) -> Vec<u8> {
        let b = p.encode();
        let back = Pdu::read_from(&mut &b[..]).unwrap();
        assert_eq!(back, p);
        b
    }

    #[test]
    fn icreq_and_icresp_are_128_bytes_with_fields_at_8_10_11_12() {
        let b = round_trip(Pdu::IcResp {
            pfv: PFV_1_0,
            cpda: 0,
            digest: 0,
            maxh2cdata: 0x20000,
        });
        assert_eq!(b.len(), 128);
        assert_eq!(&b[0..8], &[0x01, 0, 128, 0, 128, 0, 0, 0]);
        assert_eq!(&b[12..16], &[0, 0, 2, 0]);
        let q = round_trip(Pdu::IcReq {
            pfv: 0,
            hpda: 0,
            digest: 3,
            maxr2t: 0,
        });
        assert_eq!((q[0], q[11]), (0x00, 3));
    }

    #[test]
    fn capsule_cmd_carries_sqe_and_in_capsule_data_from_pdo() {
        let sqe = Sqe::new(0x7F, 9).with_fctype(1).with_data_len(1024);
        let b = round_trip(Pdu::CapsuleCmd {
            sqe,
            data: vec![0xAB; 1024],
        });
        // type 4, HLEN 72, PDO 72, PLEN 72 + 1024.
        assert_eq!(&b[0..4], &[0x04, 0, 72, 72]);
        assert_eq!(get32(&b, 4), 72 + 1024);
        assert_eq!(b[8], 0x7F);
        assert_eq!(b[72], 0xAB);
        let empty = round_trip(Pdu::CapsuleCmd {
            sqe,
            data: Vec::new(),
        });
        assert_eq!((empty[3], empty.len()), (0, 72));
    }

    #[test]
    fn data_pdus_and_r2t_at_their_offsets() {
        let c2h = round_trip(Pdu::C2HData {
            cccid: 0x0102,
            datao: 4096,
            last: true,
            success: false,
            data: vec![7; 512],
        });
        assert_eq!(&c2h[0..4], &[0x07, flag::LAST_PDU, 24, 24]);
        assert_eq!(&c2h[8..10], &[0x02, 0x01]);
        assert_eq!(get32(&c2h, 12), 4096);
        assert_eq!(get32(&c2h, 16), 512);
        let r2t = round_trip(Pdu::R2T {
            cccid: 5,
            ttag: 6,
            r2to: 0,
            r2tl: 65536,
        });
        assert_eq!((r2t[0], r2t.len(), get16(&r2t, 10)), (0x09, 24, 6));
        assert_eq!(get32(&r2t, 16), 65536);
        round_trip(Pdu::H2CData {
            cccid: 5,
            ttag: 6,
            datao: 8192,
            last: false,
            data: vec![1, 2, 3, 4],
        });
        let resp = round_trip(Pdu::CapsuleResp {
            cqe: Cqe {
                dw0: 1,
                dw1: 0,
                sqhd: 2,
                sqid: 0,
                cid: 3,
                status: Status::SUCCESS,
            },
        });
        assert_eq!((resp[0], resp[2], resp.len()), (0x05, 24, 24));
        round_trip(Pdu::TermReq {
            from_controller: true,
            fes: fes::SEQUENCE,
            fei: 0,
        });
    }

    #[test]
    fn malformed_headers_are_refused() {
        let mut b = Pdu::R2T {
            cccid: 0,
            ttag: 0,
            r2to: 0,
            r2tl: 1,
        }
        .encode();
        b[2] = 30;
        assert!(matches!(
            Pdu::read_from(&mut &b[..]),
            Err(PduError::Header { .. })
        ));
        let mut d = Pdu::H2CData {
            cccid: 0,
            ttag: 0,
            datao: 0,
            last: true,
            data: vec![0; 8],
        }
        .encode();
        d[1] |= flag::DDGSTF;
        assert!(Pdu::read_from(&mut &d[..]).is_err(), "digest flag");
        d[1] = 0;
        put32(&mut d, 16, 9);
        assert!(Pdu::read_from(&mut &d[..]).is_err(), "DATAL vs data");
        assert!(matches!(
            Pdu::read_from(&mut &[0x0Fu8, 0, 8, 0, 8, 0, 0, 0][..]),
            Err(PduError::Unexpected(0x0F))
        ));
        assert!(matches!(
            Pdu::read_from(&mut &[0x04u8, 0][..]),
            Err(PduError::Io(_))
        ));
    }
}
