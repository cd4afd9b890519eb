//! What a drive's worker and its erase share: the station's facts
//! ([`Ctx`]) and the worker's handle on its drive's row, controls and
//! identity ([`Worker`]), with the one way a state change is shown and
//! sent. A leaf of `drive` beside `state`.

use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

use super::state::{Control, State, View};
use crate::msg::Msg;
use crate::policy::Policy;
use crate::watch::Identity;

/// What every worker shares: the policy and the facts of this run.
#[derive(Debug)]
pub struct Ctx {
    /// The policy.
    pub policy: Policy,
    /// The policy file (named in each certificate's command line).
    pub policy_path: PathBuf,
    /// Where the signing key lives.
    pub key_dir: PathBuf,
    /// drivelab's version.
    pub version: String,
}

/// One drive's worker.
pub struct Worker {
    /// Kernel name.
    pub name: String,
    /// What is shown about it.
    pub view: Arc<Mutex<View>>,
    /// What the operator asked.
    pub control: Arc<Control>,
    /// Shared facts.
    pub ctx: Arc<Ctx>,
    /// To the main loop.
    pub tx: Sender<Msg>,
    /// The drive's identity when it was identified.
    pub identity: Arc<Mutex<Option<Identity>>>,
}

impl Worker {
    /// Change what is shown and tell the main loop.
    pub fn set(&self, state: State, detail: impl Into<String>) {
        let v = self.update(|v| {
            v.state = state;
            v.detail = detail.into();
        });
        let _ = self.tx.send(Msg::Changed {
            view: Box::new(v),
            progress: false,
        });
    }

    /// Change the view without a state change; returns a copy.
    pub fn update(&self, f: impl FnOnce(&mut View)) -> View {
        self.with(|v| {
            f(v);
            v.clone()
        })
    }

    /// Change or read the view without copying it.
    pub fn with<R>(&self, f: impl FnOnce(&mut View) -> R) -> R {
        match self.view.lock() {
            Ok(mut v) => f(&mut v),
            Err(p) => f(&mut p.into_inner()),
        }
    }

    /// Whether the drive was pulled: told so, or no longer the same drive.
    pub fn pulled(&self) -> bool {
        if Control::is(&self.control.removed) {
            return true;
        }
        let id = self.identity.lock().ok().and_then(|g| g.clone());
        id.is_some_and(|id| !id.still(&self.name))
    }
}
