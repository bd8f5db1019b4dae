//! SCALE-Sim topology and config parsers on sample files, including
//! malformed ones: every error names the line and the field.

use std::path::Path;
use sysgrad_workloads::scalesim::{self, parse_config, parse_topology, TopoForm};

fn topo_err(text: &str) -> String {
    parse_topology(text, Path::new("t.csv"))
        .unwrap_err()
        .to_string()
}

fn cfg_err(text: &str) -> String {
    parse_config(text, Path::new("c.cfg"))
        .unwrap_err()
        .to_string()
}

const CONV: &str = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,
Conv1, 224, 224, 7, 7, 3, 64, 2,

Conv2, 56, 56, 3, 3, 64, 64, 1,
FC, 1, 1, 1, 1, 512, 1000, 1,
";

#[test]
fn conv_form_with_trailing_commas() {
    let t = parse_topology(CONV, Path::new("net.csv")).unwrap();
    assert_eq!(
        (t.name.as_str(), t.form, t.layers.len()),
        ("net", TopoForm::Conv, 3)
    );
    let c1 = &t.layers[0];
    // ofmap = ceil((224 - 7 + 2) / 2) = 110
    assert_eq!(c1.conv.unwrap().ofmap(), (110, 110));
    assert_eq!(
        (c1.gemm.m, c1.gemm.k, c1.gemm.n),
        (64, 7 * 7 * 3, 110 * 110)
    );
    assert_eq!(t.layers[1].line, 4, "blank lines are skipped but counted");
    assert!(!c1.is_fully_connected() && t.layers[2].is_fully_connected());
    assert_eq!(t.layers[2].batched(8).n, 8);
}

#[test]
fn conv_form_with_separate_strides_and_no_trailing_comma() {
    let text = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Stride Height, Stride Width\nc, 9, 8, 3, 2, 2, 4, 2, 3";
    let l = &parse_topology(text, Path::new("t.csv")).unwrap().layers[0];
    assert_eq!(l.conv.unwrap().ofmap(), (4, 3));
    assert_eq!((l.gemm.m, l.gemm.k, l.gemm.n), (4, 12, 12));
}

#[test]
fn gemm_form() {
    let t = parse_topology(
        "Layer, M, N, K,\nfc1, 32, 128, 784,\nfc2, 32, 10, 128,\n",
        Path::new("g.csv"),
    )
    .unwrap();
    assert_eq!(t.form, TopoForm::Gemm);
    // SCALE-Sim's M (output rows) is our stream length N; its N (outputs) our M.
    assert_eq!(
        (t.layers[0].gemm.m, t.layers[0].gemm.k, t.layers[0].gemm.n),
        (128, 784, 32)
    );
}

#[test]
fn shipped_topologies_and_configs_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies");
    for f in ["vgg_small.csv", "resnet_small.csv", "vgg16_fc_gemm.csv"] {
        let t = scalesim::load_topology(&dir.join(f)).unwrap();
        assert!(!t.layers.is_empty(), "{f}");
        assert!(
            t.layers.iter().any(|l| l.is_fully_connected()),
            "{f} has an FC layer"
        );
    }
    for f in ["sysgrad_16x16.cfg", "sysgrad_32x32.cfg"] {
        let c = scalesim::load_config(&dir.join(f)).unwrap();
        assert_eq!(c.array_height, c.array_width);
        scalesim::array_for(&c).unwrap();
    }
}

#[test]
fn malformed_topologies_name_line_and_field() {
    let header = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n";
    let e = topo_err("Name, Height, Width,\nx, 1, 2,\n");
    assert!(
        e.contains("line 1") && e.contains("unrecognised header"),
        "{e}"
    );
    let e = topo_err(&format!(
        "{header}c1, 8, 8, 3, 3, 1, 4, 1,\nc2, 8, 8, 3, 3, 1,\n"
    ));
    assert!(e.contains("line 3") && e.contains("6 fields"), "{e}");
    let e = topo_err(&format!("{header}c1, 8, eight, 3, 3, 1, 4, 1,\n"));
    assert!(
        e.contains("line 2") && e.contains("`IFMAP Width` (column 3)") && e.contains("`eight`"),
        "{e}"
    );
    let e = topo_err(&format!("{header}c1, 8, 8, 3, 3, 0, 4, 1,\n"));
    assert!(
        e.contains("`Channels`") && e.contains("positive integer"),
        "{e}"
    );
    let e = topo_err(&format!("{header}c1, 8, 8, 3, 3, 1, 4, -1,\n"));
    assert!(e.contains("`Strides` (column 8)"), "{e}");
    let e = topo_err(&format!("{header}c1, 2, 8, 3, 3, 1, 4, 1,\n"));
    assert!(
        e.contains("line 2") && e.contains("Filter Height 3 is larger than IFMAP Height 2"),
        "{e}"
    );
    let e = topo_err(&format!("{header} , 8, 8, 3, 3, 1, 4, 1,\n"));
    assert!(e.contains("`Layer name` (column 1) is empty"), "{e}");
    let e = topo_err("Layer, M, N, K,\nfc, 1, 2,\n");
    assert!(e.contains("line 2") && e.contains("expected 4"), "{e}");
    let e = topo_err("Layer, M, N, K,\nfc, 1, 2, 1.5,\n");
    assert!(e.contains("`K` (column 4) = `1.5`"), "{e}");
    assert!(topo_err(header).contains("no layers"));
    assert!(topo_err("").contains("empty file"));
}

const CFG: &str = "[general]
run_name = scale_example_run_32x32_os

[architecture_presets]
ArrayHeight:    32
ArrayWidth:     32
IfmapSramSzkB:   64
FilterSramSzkB:  64
OfmapSramSzkB:   64
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Bandwidth : 64
Dataflow : os
; a comment
# another

[run_presets]
InterfaceBandwidth: USER
";

#[test]
fn scale_sim_config() {
    let c = parse_config(CFG, Path::new("scale.cfg")).unwrap();
    assert_eq!(c.run_name, "scale_example_run_32x32_os");
    assert_eq!((c.array_height, c.array_width), (32, 32));
    assert_eq!((c.ifmap_sram_kb, c.dataflow.as_str()), (Some(64), "os"));
    // Keys are case-insensitive, `=` works like `:`.
    let c = parse_config(
        "[Architecture_Presets]\narrayheight = 4\nARRAYWIDTH=8\ndataflow: WS\n",
        Path::new("c.cfg"),
    )
    .unwrap();
    assert_eq!(
        (c.array_height, c.array_width, c.dataflow.as_str()),
        (4, 8, "ws")
    );
}

#[test]
fn malformed_configs_name_line_and_field() {
    let e = cfg_err("[architecture_presets]\nArrayWidth: 8\nDataflow: ws\n");
    assert!(
        e.contains("missing `ArrayHeight` in [architecture_presets]"),
        "{e}"
    );
    let e = cfg_err("[architecture_presets]\nArrayHeight: big\nArrayWidth: 8\nDataflow: ws\n");
    assert!(
        e.contains("line 2") && e.contains("ArrayHeight = `big`"),
        "{e}"
    );
    let e = cfg_err("[architecture_presets]\nArrayHeight: 8\nArrayWidth: 8\nDataflow: rs\n");
    assert!(
        e.contains("line 4") && e.contains("Dataflow") && e.contains("os, ws, is"),
        "{e}"
    );
    let e = cfg_err("[architecture_presets]\nArrayHeight 8\n");
    assert!(
        e.contains("line 2") && e.contains("neither a [section]"),
        "{e}"
    );
    let e = cfg_err("ArrayHeight: 8\n");
    assert!(
        e.contains("line 1") && e.contains("before any [section]"),
        "{e}"
    );
    let e = cfg_err("[architecture_presets\n");
    assert!(e.contains("line 1") && e.contains("closing `]`"), "{e}");
    // Parses, but the emulated array is limited to 64x64.
    let c = parse_config(
        "[architecture_presets]\nArrayHeight: 128\nArrayWidth: 8\nDataflow: ws\n",
        Path::new("c.cfg"),
    )
    .unwrap();
    let e = scalesim::array_for(&c).unwrap_err().to_string();
    assert!(
        e.contains("ArrayHeight") && e.contains("128") && e.contains("1..=64"),
        "{e}"
    );
}
