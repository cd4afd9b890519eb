//! The output intent's colour profile: a minimal ICC v2 monitor profile
//! for gray, gamma 2.2, D50 white, built here byte by byte (ICC.1:2001-04
//! layout) so that no profile file of another licence is shipped. Every
//! mark drivelab draws is DeviceGray black; PDF/A allows device colour
//! only under an output intent, and this is the one the PDF names.

/// D50 as s15Fixed16 X, Y, Z.
const D50: [u32; 3] = [0x0000_F6D6, 0x0001_0000, 0x0000_D32D];

fn be32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_be_bytes());
}

fn pad4(v: &mut Vec<u8>) {
    while v.len() % 4 != 0 {
        v.push(0);
    }
}

/// A `textDescriptionType` tag body with `s` (ASCII).
fn desc(s: &str) -> Vec<u8> {
    let mut v = b"desc".to_vec();
    be32(&mut v, 0);
    be32(&mut v, s.len() as u32 + 1);
    v.extend_from_slice(s.as_bytes());
    v.push(0);
    // No Unicode and no ScriptCode description.
    be32(&mut v, 0);
    be32(&mut v, 0);
    v.extend_from_slice(&[0, 0, 0]);
    v.extend_from_slice(&[0u8; 67]);
    v
}

/// The profile's bytes.
pub fn gray_profile() -> Vec<u8> {
    let mut cprt = b"text".to_vec();
    be32(&mut cprt, 0);
    cprt.extend_from_slice(b"No copyright: public domain\0");
    let mut wtpt = b"XYZ ".to_vec();
    be32(&mut wtpt, 0);
    for c in D50 {
        be32(&mut wtpt, c);
    }
    let mut trc = b"curv".to_vec();
    be32(&mut trc, 0);
    be32(&mut trc, 1);
    // Gamma 2.2 as u8Fixed8.
    trc.extend_from_slice(&[0x02, 0x33]);
    let tags: [(&[u8; 4], Vec<u8>); 4] = [
        (b"desc", desc("drivelab gray, gamma 2.2")),
        (b"cprt", cprt),
        (b"wtpt", wtpt),
        (b"kTRC", trc),
    ];
    // Header, tag count, table, then the tags, each on a 4-byte boundary.
    let mut offset = 128 + 4 + 12 * tags.len();
    let mut table = Vec::new();
    let mut data = Vec::new();
    for (sig, body) in &tags {
        table.extend_from_slice(*sig);
        be32(&mut table, offset as u32);
        be32(&mut table, body.len() as u32);
        data.extend_from_slice(body);
        pad4(&mut data);
        offset = 128 + 4 + 12 * tags.len() + data.len();
    }
    let size = 128 + 4 + table.len() + data.len();
    let mut v = Vec::with_capacity(size);
    be32(&mut v, size as u32);
    be32(&mut v, 0); // preferred CMM
    be32(&mut v, 0x0210_0000); // version 2.1
    v.extend_from_slice(b"mntr");
    v.extend_from_slice(b"GRAY");
    v.extend_from_slice(b"XYZ ");
    for x in [2026u16, 1, 1, 0, 0, 0] {
        v.extend_from_slice(&x.to_be_bytes());
    }
    v.extend_from_slice(b"acsp");
    v.resize(64, 0); // platform, flags, manufacturer, model, attributes
    be32(&mut v, 0); // perceptual
    for c in D50 {
        be32(&mut v, c);
    }
    v.resize(128, 0); // creator, profile ID, reserved
    be32(&mut v, tags.len() as u32);
    v.extend_from_slice(&table);
    v.extend_from_slice(&data);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_is_laid_out_as_icc_says() {
        let p = gray_profile();
        assert_eq!(
            u32::from_be_bytes([p[0], p[1], p[2], p[3]]) as usize,
            p.len()
        );
        assert_eq!(&p[36..40], b"acsp");
        assert_eq!(&p[12..20], b"mntrGRAY");
        let n = u32::from_be_bytes([p[128], p[129], p[130], p[131]]) as usize;
        assert_eq!(n, 4);
        for i in 0..n {
            let e = &p[132 + 12 * i..144 + 12 * i];
            let off = u32::from_be_bytes([e[4], e[5], e[6], e[7]]) as usize;
            let len = u32::from_be_bytes([e[8], e[9], e[10], e[11]]) as usize;
            assert_eq!(off % 4, 0);
            assert!(off + len <= p.len());
            // Each tag's body starts with its type signature.
            let ty = &p[off..off + 4];
            assert!([b"desc", b"text", b"XYZ ", b"curv"]
                .iter()
                .any(|t| *t == ty));
        }
    }
}
