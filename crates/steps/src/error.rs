//! Why a test step could not be set up or run. Data errors found *by* a
//! step (miscompares, failed commands) are not errors here: they are the
//! step's result. These are the failures that stop drivelab from testing
//! at all; each message says what to do.

/// An error setting up or running test steps.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// A parameter has a value drivelab cannot use.
    #[error("invalid {key} {value:?}: expected {expect}")]
    BadValue {
        /// The parameter.
        key: String,
        /// What was given.
        value: String,
        /// What is accepted.
        expect: String,
    },
    /// A `file:` pattern's file could not be used (its message names the
    /// file and what to give instead).
    #[error(transparent)]
    PatternFile(drivelab_patterns::PatternError),
    /// A sequence file could not be used.
    #[error("sequence file {file}: {msg}")]
    Sequence {
        /// The file.
        file: String,
        /// What is wrong, and where.
        msg: String,
    },
    /// A step does not fit the device (range, alignment, pattern).
    #[error("step {step}: {msg}")]
    Plan {
        /// 1-based step number.
        step: usize,
        /// What is wrong and how to fix it.
        msg: String,
    },
    /// The target cannot be opened or inspected.
    #[error("{path}: {msg}")]
    Target {
        /// The device or file.
        path: String,
        /// What failed and what to check.
        msg: String,
    },
    /// The target could not be claimed for a writing step: refused by the
    /// safety assessment, held by another process, or not confirmed.
    #[error(transparent)]
    Claim(#[from] drivelab_device::claim::ClaimError),
    /// The I/O engine could not be set up or failed as a whole.
    #[error("the I/O engine failed: {0}; check that the kernel supports io_uring and the device is still there")]
    Engine(#[from] std::io::Error),
}

impl StepError {
    /// Shorthand for [`StepError::BadValue`].
    pub fn bad(key: &str, value: &str, expect: &str) -> StepError {
        StepError::BadValue {
            key: key.to_string(),
            value: value.to_string(),
            expect: expect.to_string(),
        }
    }

    /// Whether the error is in what the user asked for (exit status 2,
    /// nothing written) rather than a failure while running.
    pub fn is_input(&self) -> bool {
        !matches!(self, StepError::Engine(_))
    }
}
