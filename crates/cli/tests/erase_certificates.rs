//! Certificates of `drivelab erase`: they verify; a changed byte in the
//! JSON (a value or the signature) makes `verify-cert` exit 1 with one line;
//! so does a certificate re-signed with a key that is not trusted, until
//! that key is trusted by `--public-key` or `--trusted-keys`; the key is
//! created once, 0600, in the test's config dir; the fields come from the
//! drive (sysfs, read here independently) and the host; an erase without
//! read-back is "overwritten, not verified", never "erased".

mod erase_common;

use std::os::unix::fs::PermissionsExt;

use drivelab_testkit::{require_root, LoopDev, TempDir};
use erase_common::*;

fn erase_one(dir: &TempDir, d: &LoopDev, certs: &str) -> std::path::PathBuf {
    let v = erase_ok(dir, d.dev(), certs, &[]);
    std::path::PathBuf::from(v["drives"][0]["certificate"].as_str().unwrap())
}

#[test]
fn certificates_verify_and_a_changed_byte_does_not() {
    require_root();
    let dir = TempDir::new("erase-cert");
    let d = LoopDev::new_in(&dir, 16 << 20);
    let certs = dir.join("certs");
    let file = erase_one(&dir, &d, certs.to_str().unwrap());
    let f = file.to_str().unwrap();
    let (code, out, err) = erase(&dir, &["verify-cert", f]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("valid signature"), "{out}");

    let text = std::fs::read_to_string(&file).unwrap();
    let b = cert_body(&file);
    // Fields against sysfs and the host, read here.
    let sys = |k: &str| {
        std::fs::read_to_string(format!("/sys/block/{}/queue/{k}", d.name))
            .unwrap()
            .trim()
            .parse::<u64>()
            .unwrap()
    };
    assert_eq!(b["drive"]["path"], d.dev());
    assert_eq!(b["drive"]["capacity_bytes"].as_u64(), Some(16 << 20));
    assert_eq!(
        b["drive"]["logical_sector"].as_u64(),
        Some(sys("logical_block_size"))
    );
    assert_eq!(
        b["drive"]["physical_sector"].as_u64(),
        Some(sys("physical_block_size"))
    );
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(b["tool"]["host"], host.trim());
    assert_eq!(b["result"], "erased");
    assert_eq!(b["verification"]["mode"], "sample");
    assert_eq!(b["verification"]["subsections"].as_u64(), Some(1000));
    assert!(b["verification"]["coverage_percent"].as_f64().unwrap() >= 10.0);
    for k in ["model", "serial", "firmware"] {
        assert!(b["drive"].get(k).is_some(), "no drive.{k}");
    }
    assert!(!b["erase"]["commands"].as_array().unwrap().is_empty());
    let html = std::fs::read_to_string(file.with_extension("html")).unwrap();
    assert!(html.contains("Certificate of erasure") && html.contains(d.dev()));

    // Re-indenting keeps it valid (the signature is over canonical JSON).
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let compact = dir.join("compact.json");
    std::fs::write(&compact, serde_json::to_string(&doc).unwrap()).unwrap();
    assert_eq!(
        erase(&dir, &["verify-cert", compact.to_str().unwrap()]).0,
        0
    );

    // One changed byte in a value: the capacity's first digit.
    let at = text.find("\"capacity_bytes\": ").unwrap() + "\"capacity_bytes\": ".len();
    let mut bytes = text.clone().into_bytes();
    bytes[at] = if bytes[at] == b'9' {
        b'8'
    } else {
        bytes[at] + 1
    };
    let bad = dir.join("tampered.json");
    std::fs::write(&bad, &bytes).unwrap();
    let (code, out, err) = erase(&dir, &["verify-cert", bad.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("INVALID") && err.contains("changed after signing"),
        "{err}"
    );

    // One changed byte in the signature.
    let at = text.find("\"value\": \"").unwrap() + "\"value\": \"".len();
    let mut bytes = text.clone().into_bytes();
    bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
    std::fs::write(&bad, &bytes).unwrap();
    let (code, _, err) = erase(&dir, &["verify-cert", bad.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("INVALID"), "{err}");

    // Result changed to make a failed erase look good: caught too.
    let forged = text.replacen("\"result\": \"erased\"", "\"result\": \"erasec\"", 1);
    assert_ne!(forged, text);
    std::fs::write(&bad, forged).unwrap();
    assert_eq!(erase(&dir, &["verify-cert", bad.to_str().unwrap()]).0, 1);
}

#[test]
fn key_is_created_once_0600_and_reused() {
    require_root();
    let dir = TempDir::new("erase-key");
    let d = LoopDev::new_in(&dir, 8 << 20);
    let certs = dir.join("certs");
    let a = erase_one(&dir, &d, certs.to_str().unwrap());
    let key = dir
        .join("config")
        .join("drivelab")
        .join("erase-signing.key");
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let k1 = std::fs::read(&key).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let b = erase_one(&dir, &d, certs.to_str().unwrap());
    assert_ne!(a, b);
    assert_eq!(std::fs::read(&key).unwrap(), k1);
    let pk = |p: &std::path::Path| {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        v["signature"]["public_key"].as_str().unwrap().to_string()
    };
    assert_eq!(pk(&a), pk(&b));
    // Another user's key is not trusted when given explicitly.
    let other = "11".repeat(32);
    let (code, _, err) = erase(
        &dir,
        &["verify-cert", a.to_str().unwrap(), "--public-key", &other],
    );
    // 0x11… may not be a valid curve point; either way it is refused.
    assert_ne!(code, 0, "{err}");
}

/// Re-sign `file`'s certificate, changed by `change`, with the key in
/// `key_dir` (created there): what a forger with a key of their own does.
fn forge(
    file: &std::path::Path,
    key_dir: &std::path::Path,
    out: &std::path::Path,
    change: impl FnOnce(&mut drivelab_erase::cert::Certificate),
) {
    let mut c: drivelab_erase::cert::Certificate = serde_json::from_value(cert_body(file)).unwrap();
    change(&mut c);
    let key = drivelab_erase::cert::load_or_create_key(key_dir).unwrap();
    std::fs::write(out, drivelab_erase::cert::sign(&c, &key).unwrap()).unwrap();
}

#[test]
fn a_certificate_re_signed_with_a_foreign_key_is_not_valid() {
    require_root();
    let dir = TempDir::new("erase-forged");
    let d = LoopDev::new_in(&dir, 8 << 20);
    let certs = dir.join("certs");
    let file = erase_one(&dir, &d, certs.to_str().unwrap());
    // A forger's own key, and the certificate re-signed with it: its
    // signature is intact, it embeds the forger's key.
    let foreign = dir.join("foreign");
    let forged = dir.join("forged.json");
    forge(&file, &foreign, &forged, |c| {
        c.drive.serial = Some("FORGED-1".into());
        c.drive.capacity_bytes *= 2;
    });
    let f = forged.to_str().unwrap();
    let (code, out, err) = erase(&dir, &["verify-cert", f]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(!out.contains("valid signature"), "{out}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("NOT TRUSTED") && err.contains("not by the trusted key"),
        "{err}"
    );
    // JSON: one error object, exit status 1.
    let (code, out, _) = erase(&dir, &["verify-cert", f, "--output-format", "json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["error"].as_str().unwrap().contains("NOT TRUSTED"), "{v}");
    // A verifier with no key of its own trusts nothing by default, not
    // even a certificate nobody changed.
    let out = std::process::Command::new(BIN)
        .args(["erase", "verify-cert", file.to_str().unwrap()])
        .env("XDG_CONFIG_HOME", dir.join("empty-config"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("NOT TRUSTED") && err.contains("no key is trusted"),
        "{err}"
    );

    // Trusted explicitly, by its public key file: valid, and says by what.
    let pubkey = foreign.join("erase-signing.pub");
    let (code, out, err) = erase(
        &dir,
        &["verify-cert", f, "--public-key", pubkey.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("valid signature (the given key)"), "{out}");
    assert!(out.contains("FORGED-1"), "{out}");
    // ... which trusts only that key: our own certificate is not.
    let (code, _, err) = erase(
        &dir,
        &[
            "verify-cert",
            file.to_str().unwrap(),
            "--public-key",
            pubkey.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("NOT TRUSTED"), "{err}");
    // Trusted through a trust list: a directory of *.pub files, or a file.
    let (code, out, err) = erase(
        &dir,
        &[
            "verify-cert",
            f,
            "--trusted-keys",
            foreign.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let list = dir.join("trusted.txt");
    let hexkey = std::fs::read_to_string(&pubkey).unwrap();
    std::fs::write(&list, format!("# lab keys\n{} lab-b\n", hexkey.trim())).unwrap();
    let (code, out, err) = erase(
        &dir,
        &["verify-cert", f, "--trusted-keys", list.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("trusted key lab-b from"), "{out}");

    // Tampered after the forger signed it: invalid even to whoever trusts
    // the forger's key.
    let text = std::fs::read_to_string(&forged).unwrap();
    let tampered = text.replacen("FORGED-1", "FORGED-2", 1);
    assert_ne!(tampered, text);
    let bad = dir.join("tampered.json");
    std::fs::write(&bad, tampered).unwrap();
    let (code, out, err) = erase(
        &dir,
        &[
            "verify-cert",
            bad.to_str().unwrap(),
            "--public-key",
            pubkey.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("INVALID") && err.contains("changed after signing"),
        "{err}"
    );

    // Bad trust input is bad input: exit 2.
    std::fs::write(dir.join("garbage.txt"), "not a key\n").unwrap();
    let garbage = dir.join("garbage.txt");
    let (code, _, err) = erase(
        &dir,
        &[
            "verify-cert",
            f,
            "--trusted-keys",
            garbage.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = erase(&dir, &["verify-cert", f, "--public-key", "abc"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn an_erase_without_verification_is_certified_overwritten_not_erased() {
    require_root();
    let dir = TempDir::new("erase-unverified");
    let d = LoopDev::new_in(&dir, 8 << 20);
    fill_file(&d.backing, 0x99);
    let certs = dir.join("certs");
    let dev = d.dev();
    let (code, out, err) = erase(
        &dir,
        &[
            dev,
            "--verify",
            "none",
            "--yes",
            "--confirm-serial",
            dev,
            "--certificate-dir",
            certs.to_str().unwrap(),
            "--output-format",
            "json",
        ],
    );
    // Everything asked was done: exit 0, but not certified as erased.
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let row = &v["drives"][0];
    assert_eq!(row["result"], "overwritten, not verified");
    assert_eq!(row["verification"], "none: not performed");
    assert_eq!(first_not(&drivelab_testkit::read_all(&d.backing), 0), None);
    let file = std::path::PathBuf::from(row["certificate"].as_str().unwrap());
    let b = cert_body(&file);
    assert_eq!(b["result"], "overwritten, not verified");
    assert_eq!(b["verification"]["result"], "not performed");
    assert_eq!(b["verification"]["bytes_read"].as_u64(), Some(0));
    let (code, out, err) = erase(&dir, &["verify-cert", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(": overwritten, not verified,"), "{out}");
    assert!(!out.contains("erased"), "{out}");
    let html = std::fs::read_to_string(file.with_extension("html")).unwrap();
    assert!(
        html.contains("<b>overwritten, not verified</b>"),
        "no result in the page"
    );
}
