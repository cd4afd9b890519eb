//! What one drive's erase hands to each stage (issue, verify, the
//! certificate): the drive, its claim, the options, what the drives share
//! and the signing key. [`crate::run`] builds it; the stages only read it.

use ed25519_dalek::SigningKey;

use crate::plan::{Drive, Options};
use crate::sched::{Progress, Shared};
use drivelab_device::claim::Claim;

/// One drive's erase, with what it shares with the others.
pub(crate) struct DriveRun<'a> {
    /// The drive's place in the plan (its round-robin turn).
    pub index: usize,
    /// The drive.
    pub drive: &'a Drive,
    /// Its claim (the exclusive hold every write goes through).
    pub claim: &'a Claim,
    /// What was asked.
    pub opts: &'a Options,
    /// What the drives share.
    pub shared: &'a Shared<'a>,
    /// The signing key.
    pub key: &'a SigningKey,
    /// Its live counters.
    pub progress: &'a Progress,
}
