//! `sysgrad gen`: the Verilog of a configuration.

use crate::args::{one_config, Configs, Out};
use anyhow::{Context, Result};

/// Where `gen` writes without `-o`.
const DEFAULT_OUT: &str = "rtl_out";

#[derive(clap::Args)]
#[command(
    mut_arg("config", one_config),
    mut_arg("out", |a| a.help("Output folder for the Verilog, the C driver and the host header").default_value(DEFAULT_OUT))
)]
pub struct GenArgs {
    #[command(flatten)]
    config: Configs,
    #[command(flatten)]
    out: Out,
}

pub fn run(a: &GenArgs) -> Result<()> {
    let cfg = a.config.one_or_default()?;
    let out = a.out.or(DEFAULT_OUT);
    let dir = crate::run_dir::start(&out)?;
    let files =
        sysgrad_hdl::write_all(&cfg, &out).with_context(|| format!("writing {}", out.display()))?;
    for f in files {
        println!("wrote {}", f.display());
    }
    crate::run_dir::finish(&dir)
}
