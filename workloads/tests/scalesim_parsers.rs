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
    assert_eq!(t.layers[2].batched(8).unwrap().n, 8);
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
        e.contains("line 2") && e.contains("3 fields") && e.contains("(GEMM)"),
        "{e}"
    );
    let e = topo_err(&format!(
        "{header}c1, 8, 8, 3, 3, 1, 4, 1,\nc2, 8, 8, 3, 3, 1,\n"
    ));
    assert!(
        e.contains("line 3") && e.contains("6 fields") && e.contains("convolution topology"),
        "{e}"
    );
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
    let e = topo_err("Layer, M, N, K,\nfc, 1, 2, 3,\nfc2, 1, 2,\n");
    assert!(
        e.contains("line 3") && e.contains("3 fields") && e.contains("GEMM topology"),
        "{e}"
    );
    for bad in ["3:2", "0:4", "a:b", "4"] {
        let e = topo_err(&format!("Layer, M, N, K,\nfc, 1, 2, 3, {bad},\n"));
        assert!(
            e.contains("`Sparsity (N:M)` (column 5)") && e.contains(bad),
            "{e}"
        );
    }
    let e = topo_err(&format!("{header}c1, 8, 8, 3, 3, 1, 4, 1, 5:4,\n"));
    assert!(e.contains("(column 9) = `5:4`"), "{e}");
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
    assert_eq!((c.memory.ifmap_sram_kb, c.dataflow.as_str()), (64, "os"));
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

/// Issue 28: a repeated section or key silently took the last value;
/// SCALE-Sim's configparser refuses the file (DuplicateSectionError,
/// DuplicateOptionError), and so does this reader, naming both lines.
#[test]
fn repeated_sections_and_keys_are_refused() {
    let e = cfg_err(&format!("{CFG}[architecture_presets]\nArrayHeight: 8\n"));
    assert!(
        e.starts_with("c.cfg: line 20: section [architecture_presets] already appeared at line 4"),
        "{e}"
    );
    let e = cfg_err("[architecture_presets]\nArrayHeight: 8\nArrayWidth: 8\narrayheight = 16\n");
    assert!(
        e.starts_with(
            "c.cfg: line 4: [architecture_presets] `arrayheight` is already set at line 2"
        ),
        "{e}"
    );
    // The same key in two sections is two keys.
    let c = parse_config(
        &format!("{CFG}[sysgrad]\nBandwidth: 3\n"),
        Path::new("c.cfg"),
    );
    assert!(c.is_ok(), "{c:?}");
    for text in [
        "[General]\nrun_name = a\n[general]\nrun_name = b\n",
        "[general]\nrun_name = a\n\n[general]\n",
    ] {
        let e = cfg_err(text);
        assert!(
            e.contains("section [general] already appeared at line 1"),
            "{e}"
        );
    }
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
    // Parses, but the emulated array is limited to MAX_DIM x MAX_DIM.
    let too_big = sysgrad_config::MAX_DIM + 1;
    let c = parse_config(
        &format!("[architecture_presets]\nArrayHeight: {too_big}\nArrayWidth: 8\nDataflow: ws\n"),
        Path::new("c.cfg"),
    )
    .unwrap();
    let e = scalesim::array_for(&c).unwrap_err().to_string();
    assert!(
        e.contains("ArrayHeight")
            && e.contains(&too_big.to_string())
            && e.contains(&format!("1..={}", sysgrad_config::MAX_DIM)),
        "{e}"
    );
    for (line, what) in [
        ("[run_presets]\nInterfaceBandwidth: user\n", "USER, CALC"),
        (
            "[run_presets]\nInterfaceBandwidth: USER\n",
            "needs `Bandwidth`",
        ),
        ("[run_presets]\nUseRamulatorTrace: maybe\n", "not a boolean"),
        (
            "[sparsity]\nSparsitySupport: true\nSparseRep: coo\n",
            "ellpack_block",
        ),
        ("[layout]\nIfmapSRAMBankNum: 0\n", "IfmapSRAMBankNum"),
        ("Bandwidth: 10,x\n", "comma list"),
    ] {
        let e = cfg_err(&format!(
            "[architecture_presets]\nArrayHeight: 8\nArrayWidth: 8\nDataflow: ws\n{line}"
        ));
        assert!(e.contains(what), "{line}: {e}");
    }
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("topologies/scalesim3")
        .join(name)
}

/// SCALE-Sim 3.0's conv rows: the ninth column is an N:M ratio.
#[test]
fn v3_conv_rows_with_a_sparsity_column() {
    let t = scalesim::load_topology(&fixture("conv_sparse.csv")).unwrap();
    assert_eq!((t.form, t.layers.len()), (TopoForm::Conv, 4));
    let ratios: Vec<String> = t.layers.iter().map(|l| l.sparsity.to_string()).collect();
    assert_eq!(ratios, ["1:1", "2:4", "1:4", "4:8"]);
    assert!(t.is_sparse() && t.layers[0].sparsity.is_dense());
    // The stride is the eighth column, both ways: (34 - 3 + 2) / 2 -> 17.
    let c2 = t.layers[1].conv.unwrap();
    assert_eq!((c2.stride_h, c2.stride_w, c2.ofmap()), (2, 2, (17, 17)));
    assert_eq!(t.layers[2].sparsity.density(), 0.25);
}

#[test]
fn v3_gemm_rows_with_a_sparsity_column() {
    let t = scalesim::load_topology(&fixture("gemm_sparse.csv")).unwrap();
    assert_eq!((t.form, t.layers.len()), (TopoForm::Gemm, 3));
    let l = &t.layers[1];
    assert_eq!((l.gemm.m, l.gemm.k, l.gemm.n), (1536, 384, 196));
    assert_eq!(
        l.sparsity,
        scalesim::topology::Sparsity {
            nonzero: 2,
            block: 4
        }
    );
}

/// v2 rows keep their separate stride width.
#[test]
fn v2_rows_with_stride_height_and_width() {
    let t = scalesim::load_topology(&fixture("v2_strides.csv")).unwrap();
    let c = t.layers[0].conv.unwrap();
    // ceil((35 - 3 + 2) / 2) = 17, ceil((33 - 3 + 1) / 1) = 31
    assert_eq!(((c.stride_h, c.stride_w), c.ofmap()), ((2, 1), (17, 31)));
    assert_eq!(t.layers[1].conv.unwrap().ofmap(), (15, 16));
    assert!(t.layers.iter().all(|l| l.sparsity.is_dense()));
}

/// The header is skipped whatever it says; the form comes from the rows.
#[test]
fn any_header_line_is_skipped() {
    let t = scalesim::load_topology(&fixture("other_header.csv")).unwrap();
    assert_eq!((t.form, t.layers.len()), (TopoForm::Conv, 2));
    let t = parse_topology("whatever\nfc, 4, 10, 20,\n", Path::new("g.csv")).unwrap();
    assert_eq!((t.form, t.layers[0].gemm.m), (TopoForm::Gemm, 10));
    // A file whose first line is a layer loses it, as in SCALE-Sim.
    let t = parse_topology("a, 4, 10, 20,\nb, 4, 10, 30,\n", Path::new("g.csv")).unwrap();
    assert_eq!(t.layers.len(), 1);
}

/// `DP` in a name: one layer per channel, one channel each, as SCALE-Sim.
#[test]
fn depthwise_layers_run_one_channel_at_a_time() {
    let t = scalesim::load_topology(&fixture("depthwise.csv")).unwrap();
    assert_eq!(t.layers.len(), 1 + 8 + 1);
    let dp: Vec<_> = t.layers.iter().filter(|l| l.depthwise.is_some()).collect();
    assert_eq!(dp.len(), 8);
    for (i, l) in dp.iter().enumerate() {
        assert_eq!(l.name, format!("DP_Conv2Channel_{i}"));
        let d = l.depthwise.as_ref().unwrap();
        assert_eq!(
            (d.layer.as_str(), d.channel, d.channels),
            ("DP_Conv2", i, 8)
        );
        // 3x3 filter over one channel, one filter, 16x16 outputs.
        assert_eq!((l.gemm.m, l.gemm.k, l.gemm.n), (1, 9, 256));
    }
    // Not a DP name: a dense convolution over all channels.
    assert_eq!(t.layers[9].gemm.k, 8);
}

/// A depthwise row becomes a layer per channel while the file is read, so
/// its channel count is bounded there, naming the line and the bound,
/// before anything is allocated (2^40 channels used to abort on memory).
#[test]
fn a_depthwise_row_of_too_many_channels_is_refused_at_its_line() {
    let max = scalesim::topology::MAX_DEPTHWISE_CHANNELS;
    let header = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n";
    let row = |c: usize| format!("{header}DP_a, 4, 4, 3, 3, {c}, 1, 1,\n");
    let t = parse_topology(&row(max), Path::new("dp.csv")).unwrap();
    assert_eq!(t.layers.len(), max);
    for c in [max + 1, 1 << 40] {
        let e = parse_topology(&row(c), Path::new("dp.csv"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("dp.csv") && e.contains("line 2"), "{e}");
        assert!(e.contains(&format!("at most {max}")), "{e}");
    }
}

/// Keys SCALE-Sim 3.0's `scale_config.read_conf_file` reads without a
/// default (from `scalesim/scale_config.py`), by section.
const V3_REQUIRED: [(&str, &[&str]); 5] = [
    ("general", &["run_name"]),
    ("run_presets", &["InterfaceBandwidth", "UseRamulatorTrace"]),
    (
        "architecture_presets",
        &[
            "ArrayHeight",
            "ArrayWidth",
            "IfmapSramSzkB",
            "FilterSramSzkB",
            "OfmapSramSzkB",
            "IfmapOffset",
            "FilterOffset",
            "OfmapOffset",
            "Dataflow",
            "ReadRequestBuffer",
            "WriteRequestBuffer",
            "Bandwidth",
        ],
    ),
    (
        "layout",
        &[
            "IfmapCustomLayout",
            "FilterCustomLayout",
            "IfmapSRAMBankBandwidth",
            "IfmapSRAMBankNum",
            "IfmapSRAMBankPort",
            "FilterSRAMBankBandwidth",
            "FilterSRAMBankNum",
            "FilterSRAMBankPort",
        ],
    ),
    (
        "sparsity",
        &[
            "SparsitySupport",
            "SparseRep",
            "OptimizedMapping",
            "BlockSize",
            "RandomNumberGeneratorSeed",
        ],
    ),
];

/// Whether `text` has `key` in `[section]`, read independently of the
/// crate's parser (line by line, case-insensitive as configparser).
fn has_key(text: &str, section: &str, key: &str) -> bool {
    let mut current = String::new();
    text.lines().map(str::trim).any(|l| {
        if let Some(s) = l.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            current = s.to_ascii_lowercase();
            return false;
        }
        let k = l.split([':', '=']).next().unwrap_or("").trim();
        current == section && k.eq_ignore_ascii_case(key)
    })
}

fn assert_loads_in_scalesim3(text: &str, what: &str) {
    for (section, keys) in V3_REQUIRED {
        for key in keys {
            assert!(has_key(text, section, key), "{what}: no [{section}] {key}");
        }
    }
}

#[test]
fn v3_configs_with_every_section_are_read() {
    let c = scalesim::load_config(&fixture("scale_v3_128.cfg")).unwrap();
    assert_eq!(
        (c.array_height, c.array_width, c.dataflow.as_str()),
        (128, 128, "ws")
    );
    assert_eq!(
        c.memory.interface_bandwidth,
        scalesim::config::BandwidthMode::User
    );
    assert_eq!(
        (c.memory.bandwidth.clone(), c.memory.ifmap_sram_kb),
        (vec![50], 256)
    );
    assert_eq!(
        (c.memory.read_request_buffer, c.memory.filter_offset),
        (128, 100)
    );
    assert!(c.sparsity.support && c.sparsity.optimized_mapping);
    assert_eq!(
        (c.sparsity.block_size, c.layout.ifmap_sram_bank_num),
        (8, 1)
    );
    assert!(c.unused.is_empty(), "{:?}", c.unused);
    let c = parse_config(&format!("{CFG}[extra]\nfoo: 1\n"), Path::new("c.cfg")).unwrap();
    assert_eq!(c.unused, ["[extra] foo"]);
}

/// The configs we ship and the ones we write have every key SCALE-Sim 3.0
/// asks for, and read back unchanged.
#[test]
fn configs_we_write_load_in_scalesim3() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies");
    for f in [
        "sysgrad_16x16.cfg",
        "sysgrad_32x32.cfg",
        "scalesim3/scale_v3_128.cfg",
        "scalesim3/scale_v3_256.cfg",
    ] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        assert_loads_in_scalesim3(&text, f);
        let c = parse_config(&text, Path::new(f)).unwrap();
        let written = c.to_cfg();
        assert_loads_in_scalesim3(&written, &format!("{f} written"));
        let again = parse_config(&written, Path::new("w.cfg")).unwrap();
        assert_eq!(again, c, "{f}");
    }
    let built = scalesim::ScaleConfig::for_array("x", 8, 4);
    assert_loads_in_scalesim3(&built.to_cfg(), "for_array");
}

/// Issue 28: a convolution row whose K or N does not fit in 64 bits is
/// refused at its line, naming the product (it used to wrap).
#[test]
fn convolutions_whose_products_pass_64_bits_are_refused() {
    let head = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n";
    let e = topo_err(&format!(
        "{head}ok, 8, 8, 3, 3, 1, 1, 1,\nbig, 1099511627776, 1099511627776, 1, 1, 1, 1, 1,\n"
    ));
    assert!(
        e.contains("line 3")
            && e.contains(
                "N = OFMAP Height x OFMAP Width = 1099511627776 x 1099511627776 exceeds 2^64 - 1"
            ),
        "{e}"
    );
    let e = topo_err(&format!(
        "{head}wide, 4, 4, 4, 4, 18446744073709551615, 1, 1,\n"
    ));
    assert!(
        e.contains("line 2") && e.contains("K = Filter Height x Filter Width x Channels"),
        "{e}"
    );
    // The largest map: its output size is computed without overflow.
    let t = parse_topology(
        &format!("{head}edge, 18446744073709551615, 1, 1, 1, 1, 1, 18446744073709551615,\n"),
        Path::new("t.csv"),
    )
    .unwrap();
    assert_eq!(
        t.layers[0].gemm.n, 2,
        "ceil((2^64 - 2 + s) / s) with s = 2^64 - 1"
    );
}
