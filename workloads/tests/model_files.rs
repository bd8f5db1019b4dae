//! Example models load; bad model and data files give clear errors (the
//! field and its allowed range), never a panic.

mod common;

use common::*;
use std::path::Path;
use sysgrad_workloads::{data, model};

#[test]
fn example_models_load_and_are_consistent() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    for (f, gemm_layers) in [("mlp.toml", 2), ("cnn.toml", 3), ("snn.toml", 2)] {
        let m = model::load_model(&dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        let shapes = sysgrad_workloads::report::layers::gemm_shapes(&m, m.spec.training.batch_size);
        assert_eq!(shapes.iter().flatten().count(), gemm_layers, "{f}");
        assert_eq!(m.shapes.last().unwrap().size(), 10);
        assert!(m.data_path.exists(), "{f}: {}", m.data_path.display());
    }
    let snn = model::load_model(&dir.join("snn.toml")).unwrap();
    assert!(snn.spec.input.time_steps > 1);
}

#[test]
fn json_models_parse_too() {
    let m = model(&small_model((4, 4), "", MLP_LAYERS, SGD, 8));
    let json = serde_json::to_string(&m.spec).unwrap();
    let back = model::parse_model(&json, true, Path::new("m.json")).unwrap();
    assert_eq!(back.spec, m.spec);
}

fn with(layers: &str, opt: &str) -> String {
    model_error(&small_model((8, 8), "", layers, opt, 16))
}

#[test]
fn syntax_and_unknown_fields_name_the_line() {
    let e = model_error(&small_model(
        (8, 8),
        "",
        &MLP_LAYERS.replace("units = 16", "untis = 16"),
        SGD,
        16,
    ));
    assert!(
        e.contains("bad.toml") && e.contains("line") && e.contains("untis"),
        "{e}"
    );
    let e = model_error(&small_model(
        (8, 8),
        "",
        &MLP_LAYERS.replace("units = 16", "units = -3"),
        SGD,
        16,
    ));
    assert!(e.contains("line") && e.contains("units"), "{e}");
    let e = with(&MLP_LAYERS.replace("\"relu\"", "\"gelu\""), SGD);
    assert!(e.contains("gelu") && e.contains("relu"), "{e}");
    let e = with(
        &MLP_LAYERS.replace("units = 16", "units = 16\nkernel = 3"),
        SGD,
    );
    assert!(
        e.contains("layers[1]: `kernel` is not a field of a dense layer (fields: units)"),
        "{e}"
    );
    let e = with(&MLP_LAYERS.replace("units = 16", ""), SGD);
    assert!(e.contains("layers[1]: a dense layer needs `units`"), "{e}");
    let e = model_error("name = \"x\"\n");
    assert!(e.contains("missing field"), "{e}");
}

#[test]
fn out_of_range_fields_name_the_field_and_range() {
    let e = with(&MLP_LAYERS.replace("units = 16", "units = 0"), SGD);
    assert!(
        e.contains("layers[1] (dense).units = 0") && e.contains("1..=4096"),
        "{e}"
    );
    let conv = "[[layers]]\ntype = \"conv2d\"\nfilters = 4\nkernel = 11\n[[layers]]\ntype = \"flatten\"\n[[layers]]\ntype = \"dense\"\nunits = 10\n";
    let e = with(conv, SGD);
    assert!(
        e.contains("layers[0] (conv2d).kernel = 11") && e.contains("1..=8"),
        "{e}"
    );
    let e = with(&conv.replace("kernel = 11", "kernel = 3\npadding = 3"), SGD);
    assert!(e.contains("padding = 3") && e.contains("0..=2"), "{e}");
    let e = with(&conv.replace("kernel = 11", "kernel = 3\nstride = 9"), SGD);
    assert!(e.contains("stride = 9") && e.contains("1..=8"), "{e}");
    let e = with(MLP_LAYERS, &SGD.replace("lr_shift = 10", "lr_shift = 40"));
    assert!(
        e.contains("optimizer.lr_shift = 40") && e.contains("0..=29"),
        "{e}"
    );
    let e = with(
        MLP_LAYERS,
        &SGD.replace("grad_scale_shift = 4", "grad_scale_shift = 5"),
    );
    assert!(
        e.contains("optimizer.grad_scale_shift = 5") && e.contains("0..=4"),
        "{e}"
    );
    let e = model_error(&small_model((8, 8), "", MLP_LAYERS, SGD, 0));
    assert!(e.contains("training.batch_size = 0"), "{e}");
    // One row more than the configuration allows.
    let max = sysgrad_config::MAX_DIM;
    let e = model_error(&small_model((max + 1, 8), "", MLP_LAYERS, SGD, 8));
    assert!(
        e.contains(&format!("array.rows = {}", max + 1)) && e.contains(&format!("1..={max}")),
        "{e}"
    );
    let lif = "[[layers]]\ntype = \"flatten\"\n[[layers]]\ntype = \"dense\"\nunits = 10\n[[layers]]\ntype = \"lif\"\nbeta = 1.5\nthreshold = 1.0\n";
    let e = with(lif, SGD);
    assert!(
        e.contains("layers[2] (lif).beta = 1.5") && e.contains("(0, 1]"),
        "{e}"
    );
    let e = with(
        &lif.replace("beta = 1.5", "beta = 0.9")
            .replace("threshold = 1.0", "threshold = 0.0"),
        SGD,
    );
    assert!(e.contains("threshold = 0"), "{e}");
}

#[test]
fn layers_that_do_not_fit_together() {
    let e = with("[[layers]]\ntype = \"dense\"\nunits = 10\n", SGD);
    assert!(
        e.contains("layers[0] (dense)") && e.contains("add a flatten layer"),
        "{e}"
    );
    let e = with(&MLP_LAYERS.replace("units = 10", "units = 7"), SGD);
    assert!(
        e.contains("layers[3]") && e.contains("10 values") && e.contains("7x1x1"),
        "{e}"
    );
    let e = with(
        MLP_LAYERS,
        "[optimizer]\nkind = \"momentum\"\nlr_shift = 10\ngrad_scale_shift = 4\n",
    );
    assert!(
        e.contains("optimizer.momentum") && e.contains("required"),
        "{e}"
    );
    let e = with(MLP_LAYERS, &format!("{SGD}momentum = 0.9\n"));
    assert!(
        e.contains("optimizer.momentum") && e.contains("only used"),
        "{e}"
    );
    let e = with(
        MLP_LAYERS,
        "[optimizer]\nkind = \"momentum\"\nlr_shift = 10\ngrad_scale_shift = 4\nmomentum = 1.0\n",
    );
    assert!(
        e.contains("optimizer.momentum = 1") && e.contains("[0, 1)"),
        "{e}"
    );
}

#[test]
fn bad_data_files_name_the_line_and_field() {
    let p = Path::new("d.csv");
    let row = |label: &str| format!("{}{label}\n", "1,".repeat(64));
    assert!(data::parse(&row("3"), p).is_ok());
    let e = data::parse(&format!("{}{}", row("3"), row("12")), p)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 2") && e.contains("field 65 (label) = 12") && e.contains("0..=9"),
        "{e}"
    );
    let e = data::parse(&row("3").replacen('1', "17", 1), p)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 1") && e.contains("field 1 (pixel) = 17"),
        "{e}"
    );
    let e = data::parse("1,2,3\n", p).unwrap_err().to_string();
    assert!(e.contains("3 fields"), "{e}");
    let e = data::parse(&row("x"), p).unwrap_err().to_string();
    assert!(e.contains("`x` is not an integer"), "{e}");
    let e = data::load(Path::new("/nonexistent/digits.csv"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot read /nonexistent/digits.csv"), "{e}");
}

#[test]
fn the_shipped_data_set_and_its_split() {
    let m = model(&small_model((4, 4), "", MLP_LAYERS, SGD, 8));
    let samples = data::load(&m.data_path).unwrap();
    assert_eq!(samples.len(), 1797);
    assert!(samples.iter().all(|s| s.pixels.len() == 64));
    let a = data::split(&samples, 0.2, 1).unwrap();
    let b = data::split(&samples, 0.2, 1).unwrap();
    assert_eq!(a.test, b.test, "the split is deterministic");
    assert_eq!(a.test.len(), (samples.len() as f64 * 0.2).round() as usize);
    assert_eq!(a.train.len() + a.test.len(), 1797);
    let c = data::split(&samples, 0.2, 2).unwrap();
    assert_ne!(a.test, c.test, "and depends on the seed");
}
