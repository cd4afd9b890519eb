//! Wall-clock times for certificates and journals (UTC, RFC 3339), and the
//! host facts a certificate names. No time-zone database: certificates are
//! in UTC.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds and nanoseconds since the Unix epoch, now.
pub fn unix_now() -> (u64, u32) {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs(), d.subsec_nanos()),
        Err(_) => (0, 0),
    }
}

/// RFC 3339 UTC with milliseconds: `2026-11-22T04:25:25.123Z`.
pub fn rfc3339(secs: u64, nanos: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = drivelab_engine::clock::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60,
        nanos / 1_000_000
    )
}

/// This host's name (`/proc/sys/kernel/hostname`).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The running kernel's release (`/proc/sys/kernel/osrelease`).
pub fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The host's DMI identity (`/sys/class/dmi/id`), None when the host has
/// no DMI tables or every field is empty.
pub fn machine() -> Option<crate::cert::model::MachineSection> {
    let read = |k: &str| {
        std::fs::read_to_string(format!("/sys/class/dmi/id/{k}"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let m = crate::cert::model::MachineSection {
        vendor: read("sys_vendor"),
        model: read("product_name"),
        serial: read("product_serial"),
        uuid: read("product_uuid"),
    };
    (m != crate::cert::model::MachineSection::default()).then_some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        // 2000-02-29 12:34:56 UTC = 951827696 (leap day).
        assert_eq!(rfc3339(951_827_696, 5_000_000), "2000-02-29T12:34:56.005Z");
        // 2026-11-22 04:25:25 UTC = 1795321525.
        assert_eq!(rfc3339(1_795_321_525, 0), "2026-11-22T04:25:25.000Z");
    }
}
