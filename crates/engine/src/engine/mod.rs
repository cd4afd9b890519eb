//! The engine front door: the [`Engine`] interface, what it does I/O on
//! ([`Target`]) and the engines every data-moving subcommand picks from
//! (io_uring, psync, null), under the names the other crates use.
//!
//! The interface is defined in [`interface`]; the engines in
//! [`crate::engines`]; this module only names them together.

pub mod interface;

pub use crate::engines::null::Null;
pub use crate::engines::psync::{Psync, PsyncOptions};
pub use crate::engines::uring::{Uring, UringOptions};
pub use crate::target::Target;
pub use interface::{Caps, Completion, Engine, MAX_DEPTH};
