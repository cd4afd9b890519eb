//! Typed errors of the simulated SSD.

/// A configuration the model cannot run; the message says what to change.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);
