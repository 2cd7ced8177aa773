//! `tributary send` and `tributary recv` (placeholder until the UDP driver lands).

use clap::Args;

/// Arguments of `tributary send`.
#[derive(Args)]
pub struct SendArgs {
    /// File to send.
    pub file: std::path::PathBuf,
}

/// Arguments of `tributary recv`.
#[derive(Args)]
pub struct RecvArgs {
    /// Where to write the received file.
    #[arg(long)]
    pub out: std::path::PathBuf,
}

pub fn send(_a: SendArgs) -> anyhow::Result<()> {
    anyhow::bail!("the UDP driver is not built yet")
}

pub fn recv(_a: RecvArgs) -> anyhow::Result<()> {
    anyhow::bail!("the UDP driver is not built yet")
}
