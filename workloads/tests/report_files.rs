//! The output folder of a training run and of a topology run: every file
//! is written, the CSVs agree with the summary, the SVGs are SVG.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_workloads::scalesim::{self, Exactness};
use sysgrad_workloads::{report, train};

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sysgrad-workloads-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn csv_rows(p: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(|f| f.trim().to_string()).collect())
        .collect()
}

#[test]
fn training_report_files() {
    let m = model(&small_model((8, 8), "", MLP_LAYERS, SGD, 16));
    let split = split(&m);
    let opts = train::TrainOptions {
        epochs: Some(2),
        max_train: Some(64),
        max_test: Some(32),
        progress: false,
        ..train::TrainOptions::default()
    };
    let run = train::train(&m, &split, &opts).unwrap();
    let out = temp_dir("train");
    let s = report::write_training_report(&run, &out).unwrap();
    for f in &s.files {
        assert!(f.exists(), "{}", f.display());
    }
    for svg in ["curves.svg", "layer_cycles.svg", "utilization.svg"] {
        let text = std::fs::read_to_string(out.join(svg)).unwrap();
        assert!(text.contains("<svg") && text.contains("</svg>"), "{svg}");
    }
    let curves = csv_rows(&out.join("curves.csv"));
    assert_eq!(curves.len(), 1 + 2);
    // layers.csv: one row per GEMM layer, cycles as in the summary.
    let layers = csv_rows(&out.join("layers.csv"));
    assert_eq!(layers.len(), 1 + s.layers.len());
    for (row, l) in layers[1..].iter().zip(&s.layers) {
        assert_eq!(row[3], l.forward.cycles.to_string());
        assert_eq!(row[5], l.backward_sequential.unwrap().cycles.to_string());
    }
    // The per-phase rows of a pass add up to its total row.
    let phases = csv_rows(&out.join("layer_phases.csv"));
    let mut sum = 0u64;
    for r in &phases[1..] {
        if r[4] == "total" {
            assert_eq!(r[5].parse::<u64>().unwrap(), sum, "{r:?}");
            sum = 0;
        } else {
            sum += r[5].parse::<u64>().unwrap();
        }
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["epochs"], 2);
    assert!(json["network"]["training_cycle_ratio"].as_f64().unwrap() > 1.0);
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn topology_report_files() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies");
    let topo = scalesim::load_topology(&dir.join("vgg_small.csv")).unwrap();
    let sc = scalesim::load_config(&dir.join("sysgrad_16x16.cfg")).unwrap();
    let run = scalesim::run_topology(
        &topo,
        &sc,
        1,
        DwSink::Update { lr_shift: 8 },
        Exactness::FastLedger,
    )
    .unwrap();
    let out = temp_dir("topo");
    let s = scalesim::report::write_topology_report(&run, &out).unwrap();
    let report =
        std::fs::read_to_string(out.join("COMPUTE_REPORT_TRAINING_INTERLEAVED.csv")).unwrap();
    let mut lines = report.lines();
    // SCALE-Sim 3.0's header, as its simulator.py writes it.
    let v3_header = "LayerID, Total Cycles (incl. prefetch), Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %,";
    assert_eq!(lines.next().unwrap(), v3_header);
    let pes = (16 * 16) as f64;
    for (line, l) in lines.zip(&s.layers) {
        let f: Vec<&str> = line.split(", ").collect();
        let r = &l.training_interleaved;
        assert_eq!(f[0], l.id.to_string());
        assert_eq!(f[2], r.total_cycles.to_string());
        // CALC bandwidth (the shipped config): no stalls.
        assert_eq!(f[3], "0");
        let util: f64 = f[4].parse().unwrap();
        let want = 100.0 * r.macs as f64 / (r.total_cycles as f64 * pes);
        assert!((util - want).abs() < 1e-3, "{util} {want}");
        assert!(line.ends_with(','));
    }
    let fwd = std::fs::read_to_string(out.join("COMPUTE_REPORT.csv")).unwrap();
    assert_eq!(fwd.lines().next().unwrap(), v3_header);
    assert_eq!(fwd.lines().count(), topo.layers.len() + 1);
    for (name, first) in [
        ("BANDWIDTH_REPORT.csv", "LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP SRAM BW, Avg IFMAP DRAM BW, Avg FILTER DRAM BW, Avg OFMAP DRAM BW,"),
        ("DETAILED_ACCESS_REPORT.csv", "LayerID, SRAM IFMAP Start Cycle, SRAM IFMAP Stop Cycle, SRAM IFMAP Reads, SRAM Filter Start Cycle, SRAM Filter Stop Cycle, SRAM Filter Reads, SRAM OFMAP Start Cycle, SRAM OFMAP Stop Cycle, SRAM OFMAP Writes, DRAM IFMAP Start Cycle, DRAM IFMAP Stop Cycle, DRAM IFMAP Reads, DRAM Filter Start Cycle, DRAM Filter Stop Cycle, DRAM Filter Reads, DRAM OFMAP Start Cycle, DRAM OFMAP Stop Cycle, DRAM OFMAP Writes,"),
    ] {
        let text = std::fs::read_to_string(out.join(name)).unwrap();
        assert_eq!(text.lines().next().unwrap(), first, "{name}");
        assert_eq!(text.lines().count(), topo.layers.len() + 1, "{name}");
    }
    let sys = std::fs::read_to_string(out.join("SYSGRAD_REPORT.csv")).unwrap();
    assert_eq!(sys.lines().count(), 3 * topo.layers.len() + 1);
    let energy = std::fs::read_to_string(out.join("ENERGY_REPORT.csv")).unwrap();
    assert!(energy.contains("backward_interleaved") && energy.contains("off_chip"));
    let md = std::fs::read_to_string(out.join("COMPARISON.md")).unwrap();
    assert!(md.contains("published") && md.contains("FC layers"));
    let w = s.whole_network.unwrap();
    assert!(w.training_cycle_ratio > 1.0 && w.training_cycle_reduction > 0.0);
    assert!(
        s.fully_connected.unwrap().layers
            == topo
                .layers
                .iter()
                .filter(|l| l.is_fully_connected())
                .count()
    );
    std::fs::remove_dir_all(&out).unwrap();
}

/// Our `COMPUTE_REPORT.csv` against SCALE-Sim 3.0.0's own for the same
/// topology and config (`topologies/scalesim3/outputs/`, written by
/// `scripts/scalesim_compare.sh`): the same Compute Util % and Mapping
/// Efficiency %, the same MACs (Overall Util x Total Cycles), and Total
/// Cycles one more per fold, plus one (README, Side by side).
#[test]
fn compute_report_matches_scalesim_3() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies");
    let topo = scalesim::load_topology(&dir.join("vgg_small.csv")).unwrap();
    let sc = scalesim::load_config(&dir.join("sysgrad_16x16.cfg")).unwrap();
    let sink = DwSink::Update { lr_shift: 8 };
    let run = scalesim::run_topology(&topo, &sc, 1, sink, Exactness::FastLedger).unwrap();
    let out = temp_dir("scalesim3");
    let s = scalesim::report::write_topology_report(&run, &out).unwrap();
    let rows = |text: &str| -> Vec<Vec<f64>> {
        text.lines()
            .skip(1)
            .map(|l| {
                l.trim_end_matches(',')
                    .split(", ")
                    .map(|v| v.parse().unwrap())
                    .collect()
            })
            .collect()
    };
    let ours = rows(&std::fs::read_to_string(out.join("COMPUTE_REPORT.csv")).unwrap());
    let theirs = rows(
        &std::fs::read_to_string(
            dir.join("scalesim3/outputs/vgg_small_sysgrad_16x16_COMPUTE_REPORT.csv"),
        )
        .unwrap(),
    );
    assert_eq!(ours.len(), theirs.len());
    // Ours are printed with 4 decimals, SCALE-Sim's in full.
    let close = |a: f64, b: f64| (a - b).abs() <= 0.5e-4 + 1e-9;
    let pes = (sc.array_height * sc.array_width) as f64;
    for ((o, t), layer) in ours.iter().zip(&theirs).zip(&s.layers) {
        let name = &layer.name;
        assert!(
            close(o[6], t[6]),
            "{name}: Compute Util {} vs {}",
            o[6],
            t[6]
        );
        assert!(
            close(o[5], t[5]),
            "{name}: Mapping Efficiency {} vs {}",
            o[5],
            t[5]
        );
        let their_macs = t[4] / 100.0 * t[2] * pes;
        let macs = layer.forward.macs as f64;
        assert!((their_macs - macs).abs() < 1e-6 * macs, "{name}: MACs");
        assert_eq!(
            o[2] as usize,
            t[2] as usize + layer.forward.folds + 1,
            "{name}"
        );
    }
    std::fs::remove_dir_all(&out).unwrap();
}
