//! (being written)

use clap::Args;

use crate::output::OutputArgs;

/// Arguments (being written).
#[derive(Args, Debug)]
pub struct EraseArgs {
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Run the subcommand (being written).
pub fn run(_a: EraseArgs) -> anyhow::Result<u8> {
    Err(crate::error::usage("not yet available"))
}
