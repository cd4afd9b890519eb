//! An emulated NVMe controller for the test harness (issue 28): an
//! NVMe/TCP target that the guest kernel's own nvme-tcp host driver
//! connects to, so that drivelab's NVMe commands (Identify, Get Log Page,
//! Format NVM, Sanitize, Write Zeroes, Dataset Management, reads and
//! writes) go through the kernel's ioctl and block paths exactly as on a
//! drive, to a controller that implements what QEMU's NVMe device lacks:
//! Sanitize with progress, cryptographic erase that reads back as noise,
//! several namespaces with unallocated capacity, SMART counters that move
//! with the I/O, and faults on command.
//!
//! Folders by stage, in the order a command meets them:
//! - [`pdu`]: NVMe/TCP PDUs on the wire (ICReq/ICResp, capsules, data, R2T);
//! - [`server`]: the TCP connections, one queue each;
//! - [`fabrics`]: Connect and the controller properties (Property Get/Set);
//! - [`admin`]: Identify, logs, features, Format NVM, Sanitize;
//! - [`io`]: Read, Write, Flush, Write Zeroes, Dataset Management;
//! - [`media`]: the namespaces' blocks, encrypted under a media key.
//!
//! [`ctrl`] holds the controller's state and routes each command;
//! [`cmd`] the queue entries and status codes; [`faults`] what a test can
//! make the controller do wrong. docs/emulators.md lists every command with
//! its specification section.

pub mod admin;
pub mod cmd;
pub mod ctrl;
pub mod dispatch;
pub mod fabrics;
pub mod faults;
pub mod io;
pub mod media;
pub mod pdu;
pub mod server;

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub use ctrl::{Config, Drive};

/// Binds `addr`, serves the controller `drive` on a thread of its own and
/// returns the address bound (port 0 picks a free one).
pub fn start(drive: Arc<Drive>, addr: &str) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    std::thread::spawn(move || {
        if let Err(e) = server::serve(drive, listener) {
            eprintln!("drivelab-nvmeemu: listener: {e}");
        }
    });
    Ok(bound)
}

/// Writes the controller's state as JSON to `path` (through a temporary
/// file renamed into place, so a reader never sees half of it).
pub fn write_state(drive: &Drive, path: &Path) -> std::io::Result<()> {
    let text = drive.lock().state_json().to_string();
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text + "\n")?;
    std::fs::rename(&tmp, path)
}

/// Rewrites the state file whenever the state changed, checking every
/// `every`; runs until the process ends.
pub fn keep_state(drive: Arc<Drive>, path: &Path, every: Duration) {
    loop {
        if drive.take_dirty() {
            if let Err(e) = write_state(&drive, path) {
                eprintln!("drivelab-nvmeemu: {}: {e}", path.display());
            }
        }
        std::thread::sleep(every);
    }
}
