//! `drivelab fleet`: drivelab on many hosts through Kubernetes, as a thin
//! layer: Kubernetes objects out, results in. A lab's nodes carry a label;
//! a DaemonSet runs `drivelab station` on each of them and Jobs run `run`,
//! `erase` and `health` on the drives a selection names there (by serial,
//! WWN or by-path pattern, never by `/dev/sdX`). Every pod stores its
//! results in one PostgreSQL store tagged with its node and the fleet run
//! (`drivelab_store::FleetTag`), and [`report`] merges a run's records.
//!
//! No scheduler, queue or agent protocol of drivelab's own: Kubernetes
//! places and restarts the pods, the store is the only channel back.
//!
//! - [`spec`]: what a fleet run is (namespace, image, node label, store,
//!   policy, the work and its drive selection), checked before anything
//!   is rendered;
//! - [`objects`]: the Kubernetes objects of a run, as JSON values, and
//!   [`objects::to_yaml`] for `kubectl apply -f -`;
//! - [`select`]: on a node, the drives a selection names;
//! - [`kube`]: a kubeconfig read and a small HTTPS client of the API
//!   server; [`apply`]: server-side apply, delete and the status read back;
//! - [`report`]: a run's records merged into one report.

pub mod apply;
pub mod kube;
pub mod objects;
pub mod report;
pub mod select;
pub mod spec;

/// Why a fleet command could not do what was asked; one line each, that
/// says what to do.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// A value the user gave is not usable (exit status 2, nothing sent).
    #[error("{0}")]
    BadInput(String),
    /// The kubeconfig cannot be read or used.
    #[error("kubeconfig {path}: {why}")]
    Kubeconfig {
        /// The file.
        path: String,
        /// What is wrong, and what to do.
        why: String,
    },
    /// The API server could not be reached or its answer not read.
    #[error("API server {server}: {why}")]
    Transport {
        /// The server's URL.
        server: String,
        /// What failed.
        why: String,
    },
    /// The API server refused a request.
    #[error("API server: {method} {path}: {status} {message}")]
    Refused {
        /// The method.
        method: String,
        /// The path.
        path: String,
        /// The HTTP status.
        status: u16,
        /// The Status object's message.
        message: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] drivelab_store::StoreError),
}

impl FleetError {
    /// Whether the error is in what the user gave: exit status 2.
    pub fn is_bad_input(&self) -> bool {
        match self {
            FleetError::BadInput(_) | FleetError::Kubeconfig { .. } => true,
            FleetError::Store(e) => e.is_bad_input(),
            _ => false,
        }
    }
}

/// Shorthand for the fleet's results.
pub type Result<T> = std::result::Result<T, FleetError>;
