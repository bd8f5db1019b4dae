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
    assert_eq!(
        lines.next().unwrap(),
        "LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %,"
    );
    for (line, l) in lines.zip(&s.layers) {
        let f: Vec<&str> = line.split(", ").collect();
        assert_eq!(f[0], l.id.to_string());
        assert_eq!(f[1], l.training_interleaved.total_cycles.to_string());
        assert_eq!(f[2], "0");
        assert!(line.ends_with(','));
    }
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
