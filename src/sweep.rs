//! `sysgrad sweep`: a design-space sweep (array sizes x data widths x
//! schedules) over a list of layers, in the fast exact mode, in parallel;
//! writes `sweep.csv` and `sweep.svg`.

use std::path::PathBuf;
use sysgrad_config::Backward;
use sysgrad_emulator::gemm::DwSink;
use sysgrad_explore::{Grid, Layer, SweepData};

#[derive(clap::Args)]
pub struct SweepArgs {
    /// Array sizes, ROWSxCOLS, comma-separated.
    #[arg(long, default_value = "4x4,8x8,16x16,32x32")]
    sizes: String,
    /// Data widths (bits), comma-separated; see `sweep::format_for`.
    #[arg(long, default_value = "8,16")]
    in_bits: String,
    /// Layers as NAME:MxKxN (W is M x K, batch N), comma-separated.
    #[arg(long, default_value = "fc1:256x784x64,fc2:128x256x64,fc3:10x128x64")]
    layers: String,
    /// Output folder for sweep.csv and sweep.svg.
    #[arg(long, default_value = "target/sweep")]
    out: PathBuf,
    /// Print the sweep's run time on stdout (else stderr).
    #[arg(long)]
    timings: bool,
}

fn dims(s: &str, n: usize, what: &str) -> Result<Vec<usize>, String> {
    let v: Vec<usize> = s
        .split('x')
        .map(|d| d.trim().parse::<usize>().ok().filter(|d| *d > 0))
        .collect::<Option<_>>()
        .ok_or_else(|| {
            format!("{what} `{s}`: expected {n} positive whole numbers separated by `x`")
        })?;
    if v.len() != n {
        return Err(format!(
            "{what} `{s}`: expected {n} numbers separated by `x`"
        ));
    }
    Ok(v)
}

fn parse_layers(s: &str) -> Result<Vec<Layer>, String> {
    s.split(',')
        .map(|item| {
            let (name, shape) = item
                .split_once(':')
                .ok_or_else(|| format!("layer `{item}`: expected NAME:MxKxN"))?;
            let d = dims(shape, 3, "layer shape")?;
            Ok(Layer {
                name: name.trim().to_string(),
                m: d[0],
                k: d[1],
                n: d[2],
            })
        })
        .collect()
}

pub fn run(a: &SweepArgs) -> Result<(), String> {
    let sizes = a
        .sizes
        .split(',')
        .map(|s| dims(s, 2, "array size").map(|d| (d[0], d[1])))
        .collect::<Result<Vec<_>, _>>()?;
    let in_bits = a
        .in_bits
        .split(',')
        .map(|b| {
            b.trim()
                .parse::<u32>()
                .map_err(|_| format!("--in-bits: `{b}` is not a whole number"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let layers = parse_layers(&a.layers)?;
    let grid = Grid {
        sizes,
        in_bits,
        schedules: vec![Backward::Interleaved, Backward::Sequential],
        sink: DwSink::Update { lr_shift: 8 },
        data: SweepData::Counters,
    };
    let start = std::time::Instant::now();
    let rows = sysgrad_explore::sweep(&layers, &grid).map_err(|e| e.to_string())?;
    let time = format!(
        "{} points in {:.1} ms",
        rows.len(),
        start.elapsed().as_secs_f64() * 1e3
    );
    let mut csv = Vec::new();
    sysgrad_explore::write_csv(&rows, &mut csv).map_err(|e| e.to_string())?;
    let mut svg = Vec::new();
    sysgrad_explore::plot::write_svg(&rows, &mut svg).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    for (name, bytes) in [("sweep.csv", &csv), ("sweep.svg", &svg)] {
        let path = a.out.join(name);
        crate::write_atomically(&path, bytes)?;
        println!("wrote {} ({} points)", path.display(), rows.len());
    }
    crate::print_timing(a.timings, &time);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_lists_parse_or_say_why_not() {
        let l = parse_layers("a:1x2x3,b:4x5x6").unwrap();
        assert_eq!((l[1].m, l[1].k, l[1].n), (4, 5, 6));
        assert!(parse_layers("a:1x2").unwrap_err().contains("expected 3"));
        assert!(parse_layers("a:0x2x3").unwrap_err().contains("positive"));
        assert!(parse_layers("1x2x3").unwrap_err().contains("NAME:MxKxN"));
    }
}
