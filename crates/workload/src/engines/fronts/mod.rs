//! One front per fio engine (or family of engines sharing one loop
//! engine): what `ioengine=NAME` records in the job spec and how the job
//! runs. The fronts implement [`crate::engines::front::EngineFront`] and are
//! listed in [`crate::engines::registry`].

pub mod block;
pub mod files;
pub mod net;
pub mod noio;
pub mod sg;
pub mod ucmd;

use crate::spec::kinds::EngineKind;

/// Record a front's choice in `spec`: the loop engine its I/O runs on,
/// and fio's name when it is not drivelab's own (`libaio` on io_uring).
pub(crate) fn choose_kind(spec: &mut crate::JobSpec, kind: EngineKind, name: &str) {
    spec.ioengine = kind;
    spec.ioengine_as_written = (name != kind.name()).then(|| name.to_string());
}
