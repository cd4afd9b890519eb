//! REPORT SUPPORTED OPERATION CODES (MAINTENANCE IN A3h/0Ch, SPC-5 6.35)
//! for one command (reporting options 1 and 2): what a host asks before it
//! sends a command it must not guess about (drivelab, before SANITIZE,
//! WRITE SAME and UNMAP).
//! A command is reported supported when [`Cdb::parse`] decodes it and the
//! personality serves it: SANITIZE on the SAS personality only (the SATL
//! leaves sanitize to ATA PASS-THROUGH), ATA PASS-THROUGH on the SATA one.

use crate::cdb::{cdb_len, op, Cdb, RsocRequest as Request};
use crate::sense::Sense;

/// Operation codes whose commands are told apart by a service action
/// field: option 1 is refused for them, option 2 for the others.
fn has_service_actions(opcode: u8) -> bool {
    matches!(opcode, op::SANITIZE | op::SERVICE_ACTION_IN_16)
}

/// SANITIZE's CDB usage data (SBC-4 5.30.1): IMMED, AUSE and the service
/// action in byte 1, the parameter list length in bytes 7-8, CONTROL.
const SANITIZE_USAGE: [u8; 10] = [op::SANITIZE, 0xBF, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0x07];

/// The one-command parameter data (SPC-5 6.35.3): SUPPORT in byte 1, CDB
/// SIZE in bytes 2-3, then the CDB usage data (none when not supported).
/// For a command other than SANITIZE the usage data marks every bit after
/// the operation code as one the drive may look at.
pub fn answer(r: &Request, sata: bool) -> Result<Vec<u8>, Sense> {
    if !matches!(
        (r.option, has_service_actions(r.opcode)),
        (1, false) | (2, true)
    ) {
        return Err(Sense::INVALID_FIELD_IN_CDB);
    }
    let len = cdb_len(r.opcode);
    let mut cdb = vec![0u8; len.max(1)];
    cdb[0] = r.opcode;
    if r.option == 2 && len > 1 {
        cdb[1] = (r.service_action & 0x1F) as u8;
    }
    let supported = match r.opcode {
        op::SANITIZE => !sata && matches!(r.service_action, 0x01 | 0x02 | 0x03 | 0x1F),
        op::ATA_PASS_THROUGH_12 | op::ATA_PASS_THROUGH_16 => sata,
        _ => !matches!(Cdb::parse(&cdb), Ok(Cdb::Unsupported(_)) | Err(_)),
    };
    let mut d = vec![0u8; 4];
    if !supported {
        d[1] = 0b001;
        return Ok(d);
    }
    d[1] = 0b011;
    let usage: Vec<u8> = if r.opcode == op::SANITIZE {
        SANITIZE_USAGE.to_vec()
    } else {
        let mut u = vec![0xFF; len];
        u[0] = r.opcode;
        // Byte 1 of WRITE SAME and UNMAP: only UNMAP and NDOB are looked
        // at (no ANCHOR, no protection).
        match r.opcode {
            op::WRITE_SAME_16 => u[1] = 0x09,
            op::WRITE_SAME_10 => u[1] = 0x08,
            op::UNMAP => u[1] = 0x00,
            _ => {}
        }
        u
    };
    d[2..4].copy_from_slice(&(usage.len() as u16).to_be_bytes());
    d.extend_from_slice(&usage);
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(opcode: u8, sa: Option<u16>, sata: bool) -> Result<Vec<u8>, Sense> {
        let mut b = drivelab_device::scsi::ReportSupportedOpcode::new(opcode).alloc_len(64);
        if let Some(sa) = sa {
            b = b.service_action(sa);
        }
        let cdb = b.build();
        assert_eq!(&cdb[..2], &[0xA3, 0x0C]);
        answer(&Request::parse(&cdb), sata)
    }

    #[test]
    fn sanitize_service_actions_are_reported_per_personality() {
        // (service action, SAS supports it)
        for (sa, sas) in [(1, true), (2, true), (3, true), (0x1F, true), (4, false)] {
            let d = ask(op::SANITIZE, Some(sa), false).unwrap();
            assert_eq!(d[1] & 7, if sas { 3 } else { 1 }, "sa {sa}");
            if sas {
                assert_eq!(&d[2..4], &[0, 10]);
                assert_eq!(&d[4..], &SANITIZE_USAGE);
            } else {
                assert_eq!(d.len(), 4);
            }
            // The SATA personality answers SANITIZE with INVALID OPCODE.
            assert_eq!(ask(op::SANITIZE, Some(sa), true).unwrap()[1] & 7, 1);
        }
        // SANITIZE has service actions: option 1 is an invalid field.
        assert_eq!(
            ask(op::SANITIZE, None, false),
            Err(Sense::INVALID_FIELD_IN_CDB)
        );
    }

    #[test]
    fn other_commands_follow_what_the_drive_decodes() {
        let d = ask(op::READ_16, None, false).unwrap();
        assert_eq!((d[1] & 7, &d[2..4], d[4]), (3, &[0u8, 16][..], op::READ_16));
        // WRITE SAME(16), (10) and UNMAP are served, without ANCHOR.
        let d = ask(op::WRITE_SAME_16, None, false).unwrap();
        assert_eq!((d[1] & 7, &d[2..6]), (3, &[0u8, 16, 0x93, 0x09][..]));
        assert_eq!(ask(op::WRITE_SAME_10, None, true).unwrap()[5], 0x08);
        assert_eq!(ask(op::UNMAP, None, false).unwrap()[5], 0x00);
        // WRITE LONG is not.
        assert_eq!(ask(0x3F, None, false).unwrap(), vec![0, 1, 0, 0]);
        assert_eq!(ask(op::ATA_PASS_THROUGH_16, None, false).unwrap()[1] & 7, 1);
        assert_eq!(ask(op::ATA_PASS_THROUGH_16, None, true).unwrap()[1] & 7, 3);
        // READ CAPACITY(16) is SERVICE ACTION IN(16) service action 10h.
        assert_eq!(
            ask(op::SERVICE_ACTION_IN_16, Some(0x10), false).unwrap()[1] & 7,
            3
        );
        assert_eq!(
            ask(op::SERVICE_ACTION_IN_16, Some(0x11), false).unwrap()[1] & 7,
            1
        );
    }
}
