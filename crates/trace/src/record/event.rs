//! One block event as either recorder decodes it (the tracefs ring's
//! binary pages or text, the BPF rings' records), before the matcher pairs
//! issues with completions.

/// An issue's `rwbs` text (the kernel's field is 8 or 10 bytes), held in
/// place so that decoding an event allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rwbs {
    bytes: [u8; 16],
    len: u8,
}

impl Rwbs {
    /// The first 16 bytes of `s` (more than any kernel writes).
    pub(crate) fn new(s: &[u8]) -> Rwbs {
        let len = s.len().min(16);
        let mut bytes = [0u8; 16];
        bytes[..len].copy_from_slice(&s[..len]);
        Rwbs {
            bytes,
            len: len as u8,
        }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// One parsed tracepoint event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    Issue {
        t: u64,
        dev: u32,
        sector: u64,
        nr: u64,
        rwbs: Rwbs,
    },
    Complete {
        t: u64,
        dev: u32,
        sector: u64,
        nr: u64,
        error: i64,
    },
    Requeue {
        t: u64,
        dev: u32,
        sector: u64,
    },
    Marker {
        t: u64,
    },
}
