//! `drivelab health DEV...`: each drive's own view of its health (ATA SMART,
//! SCSI log pages, NVMe SMART / Health and error logs) and the capacity
//! hidden from the host (HPA, AMA, DCO; NVMe namespaces and unallocated
//! capacity). Reads only: no claim, no consent.
//!
//! The work is `drivelab_device::health::health`, one call per drive. A
//! drive that cannot be asked is reported (one line, and in JSON its
//! decoded sense / registers / status) and the others still are; the exit
//! status is then 1.

use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};

use drivelab_device::health;
use drivelab_device::passthrough::OpError;

use crate::error::usage;
use crate::output::OutputArgs;

/// Arguments of `drivelab health`.
#[derive(Args, Debug)]
pub struct HealthArgs {
    /// The drives: /dev/sdX, /dev/sgN, /dev/nvmeXnY or /dev/nvmeX.
    #[arg(value_name = "DEV", required = true)]
    pub devices: Vec<PathBuf>,
    /// Timeout of each command in milliseconds (default 60000).
    #[arg(long = "timeout-ms", value_name = "MS")]
    pub timeout_ms: Option<u32>,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Run the subcommand.
pub fn run(a: HealthArgs) -> anyhow::Result<u8> {
    // Every path is checked before any drive is asked.
    for d in &a.devices {
        crate::error::device_node(d)?;
    }
    a.out.check()?;
    let mut docs: Vec<Value> = Vec::new();
    let mut text = String::new();
    let mut failed = 0usize;
    for dev in &a.devices {
        match health::health(dev, a.timeout_ms) {
            Ok(h) => {
                if a.out.json() {
                    docs.push(serde_json::to_value(&h)?);
                } else {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&h.to_string());
                }
            }
            Err(OpError::Failed(f)) => {
                failed += 1;
                let name = dev.display().to_string();
                let line = if f.line.contains(&name) {
                    f.line.clone()
                } else {
                    format!("{name}: {}", f.line)
                };
                if a.out.json() {
                    let mut doc = json!({ "device": name, "error": line });
                    if let (Some(d), Value::Object(e)) =
                        (doc.as_object_mut(), serde_json::to_value(&*f)?)
                    {
                        d.extend(e);
                    }
                    docs.push(doc);
                } else {
                    eprintln!("drivelab: error: {}", line.replace('\n', " "));
                }
            }
            Err(e) if e.is_input() => return Err(usage(e.to_string())),
            Err(e) => return Err(anyhow::Error::new(e)),
        }
    }
    if a.out.json() {
        let doc = json!({ "devices": docs, "failed": failed });
        a.out
            .emit(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
    } else if !text.is_empty() {
        a.out.emit(&text)?;
    }
    Ok(u8::from(failed > 0))
}
