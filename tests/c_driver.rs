//! The generated C host driver (`sa_accel.h`, `sa_accel.c`): it compiles
//! warning-free as C99 with gcc (and clang when installed) for every
//! shipped configuration, its header also as C++; its command encoders
//! give the words the command table of docs/COMMANDS.md spells out (bit
//! positions written here by hand); and linked against the Verilated
//! `sa_accel` it runs the FC training step of docs/results/accelerator.md, a faulting program
//! and one training step of a small MLP, every word read back and every
//! counter equal to the emulator's.

use std::path::Path;
use std::process::Command;
use sysgrad_config::load_config;
use sysgrad_isa::host::{Counter, CounterReference};
use sysgrad_testbench::verilator::C_FLAGS;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

/// A C program using every encoder; prints one command's words a line.
const ENCODE_TEST: &str = r#"
#include "sa_accel.h"
#include <inttypes.h>
#include <stdio.h>

static void show(const uint64_t *w, unsigned n)
{
    unsigned i;
    for (i = 0; i < n; ++i) printf("%s%016" PRIx64, i ? " " : "", w[i]);
    printf("\n");
}

int main(void)
{
    uint64_t w[2];
    char buf[160];
    sa_run run = {0};
    w[0] = sa_cmd_load_w(8, 9, 7);
    show(w, 1);
    w[0] = sa_cmd_flush_w();
    show(w, 1);
    w[0] = sa_cmd_forward(3, 300, 16, 1, 0);
    show(w, 1);
    w[0] = sa_cmd_forward(3, 300, 16, 0, 1);
    show(w, 1);
    sa_cmd_backward(w, SA_BACKWARD_INTERLEAVED, 5, 1234, 77, 16, 0, 1);
    show(w, SA_WORDS_BACKWARD);
    sa_cmd_window(w, 8, 7, 6, 5, 2, 1, 3, 1, 4);
    show(w, SA_WORDS_WINDOW);
    w[0] = sa_cmd_drain(40);
    show(w, 1);
    w[0] = sa_cmd_update(6);
    show(w, 1);
    w[0] = sa_cmd_requant(10, SA_REQUANT_TO_GRADIENTS, 20, 30);
    show(w, 1);
    sa_cmd_act(w, SA_ACT_RELU_GRAD, 10, SA_ACT_TO_GRADIENTS, 20, 30, 40, 7);
    show(w, SA_WORDS_ACT);
    w[0] = sa_cmd_sync();
    show(w, 1);
    w[0] = sa_cmd_halt();
    show(w, 1);
    run.faulted = 1;
    run.pc = 2;
    run.error = SA_ERR_TILE_TOO_LARGE;
    sa_describe_run(&run, buf, sizeof buf);
    printf("%s\n", buf);
    printf("%s %s %u\n", sa_counter_name(SA_COUNTER_IL_MACS), sa_dma_error_name(SA_DMA_ERR_RANGE),
           sa_target_lanes(SA_TARGET_ACCUMULATORS));
    return 0;
}
"#;

/// The words of ENCODE_TEST's commands, from the bit positions of
/// docs/COMMANDS.md's command table.
fn expected_words() -> Vec<String> {
    let op = |code: u64| code << 56;
    let words: Vec<Vec<u64>> = vec![
        vec![op(1) | 8 | 9 << 16 | 7 << 25],
        vec![op(2)],
        vec![op(3) | 3 | 300 << 16 | 16 << 32 | 1 << 48],
        vec![op(3) | 3 | 300 << 16 | 16 << 32 | 1 << 51],
        vec![op(4) | 3 << 49 | 5 | 77 << 16 | 16 << 32 | 1 << 51, 1234],
        // WINDOW w=8 h=7 ow=6 oh=5 stride=2 ky=1 kx=3 pad=1, images=4.
        vec![
            op(11) | 8 | 7 << 10 | 6 << 20 | 5 << 30 | 2 << 40 | 1 << 44 | 3 << 48 | 1 << 52,
            4,
        ],
        vec![op(5) | 40],
        vec![op(6) | 6],
        vec![op(7) | 10 | 1 << 48 | 20 << 16 | 30 << 32],
        vec![
            op(10) | 2 << 49 | 10 | 1 << 48 | 20 << 16 | 30 << 32,
            40 | 7 << 16,
        ],
        vec![op(8)],
        vec![op(9)],
    ];
    words
        .iter()
        .map(|w| {
            w.iter()
                .map(|x| format!("{x:016x}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
#[ignore = "needs gcc, g++"]
fn header_and_driver_compile_warning_free_and_encode_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let mut compilers = vec!["gcc"];
    if have("clang") {
        compilers.push("clang");
    } else {
        eprintln!("clang is not installed: checked with gcc only");
    }
    let mut checked = 0;
    let shipped = ["configs", "configs/float"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root().join(d)).unwrap());
    for entry in shipped {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let cfg = load_config(&path).unwrap();
        let files = sysgrad_hdl::host_driver(&cfg);
        let d = dir.path().join(cfg.tag());
        std::fs::create_dir_all(&d).unwrap();
        for f in &files {
            std::fs::write(d.join(&f.name), &f.text).unwrap();
        }
        std::fs::write(d.join("encode.c"), ENCODE_TEST).unwrap();
        for cc in &compilers {
            let exe = d.join(format!("encode_{cc}"));
            run(Command::new(cc)
                .args(C_FLAGS)
                .args(["sa_accel.c", "encode.c", "-o"])
                .arg(&exe)
                .current_dir(&d));
            let out = run(&mut Command::new(&exe));
            let lines: Vec<&str> = out.lines().collect();
            let want = expected_words();
            assert_eq!(&lines[..want.len()], want.as_slice(), "{}", cfg.tag());
            assert_eq!(
                lines[want.len()],
                "faulted at word 2: TILE_TOO_LARGE (the tile is larger than the array \
                 (m > cols or k > rows), or ACT writes more lanes than its destination has, \
                 error 0x05)"
            );
            let lanes = cfg.rows().max(cfg.cols());
            assert_eq!(lines[want.len() + 1], format!("il_macs RANGE {lanes}"));
        }
        // The header is valid C++ as well (a C++ harness includes it).
        run(Command::new("g++")
            .args(["-x", "c++", "-Wall", "-Wextra", "-Werror", "-fsyntax-only"])
            .arg("sa_accel.h")
            .current_dir(&d));
        checked += 1;
    }
    assert!(
        checked >= 3,
        "only {checked} configurations have an accelerator"
    );
}

/// The header's shape and offsets are what the RTL reads (the harness's
/// sa_open checks ID and SHAPE); the FC step of docs/results/accelerator.md and a program
/// that faults, through the driver's calls only.
#[test]
#[ignore = "needs verilator, gcc"]
fn fc_step_and_a_fault_through_the_c_driver_on_verilator() {
    let out = run(Command::new(env!("CARGO_BIN_EXE_sysgrad"))
        .args(["accel", "--config", "configs/accel_8x8.toml", "--c-driver"])
        .args(["--m", "20", "--k", "12", "--n", "5"])
        .current_dir(root()));
    for run in [
        "none interleaved",
        "none sequential",
        "dense interleaved",
        "dense sequential",
    ] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("C driver, {run} step")))
            .unwrap_or_else(|| panic!("no C driver line for {run}:\n{out}"));
        // Every counter a co-simulation can check (docs/HOST.md): the
        // emulator's and the host-tallied DMA beat counts.
        let checked = Counter::ALL
            .iter()
            .filter(|c| c.reference() != CounterReference::Unchecked)
            .count();
        assert!(
            line.contains(&format!(" {checked} counters equal")),
            "{line}"
        );
    }
    // LOAD_W with m = cols + 1 faults at word 1 with TILE_TOO_LARGE; the
    // harness compares the driver's decoding with the emulator's fault.
    let cfg = load_config(&root().join("configs/accel_8x8.toml")).unwrap();
    use sysgrad_accel::{encode_program, Command as Cmd};
    let program = encode_program(&[
        Cmd::Sync,
        Cmd::LoadW {
            addr: 0,
            m: cfg.cols() as u16 + 1,
            k: 1,
        },
        Cmd::Halt,
    ]);
    let setup = sysgrad_testbench::accel::Setup::default();
    let t = sysgrad_testbench::accel::setup_transcript(&cfg, &setup, &program).unwrap();
    assert!(t.iter().any(|op| matches!(
        op,
        sysgrad_accel::HostOp::Run {
            state: sysgrad_accel::State::Faulted(_),
            ..
        }
    )));
    let rep = sysgrad_testbench::accel::build_c_host(&cfg)
        .unwrap()
        .play(&t, 3, 10)
        .unwrap();
    assert_eq!(rep.runs, 1);
    assert!(rep.counters_compared > 30);
}

/// A float accelerator (bf16 weights, E4M3 activations, E5M2 gradients,
/// the update rounding stochastically) through the C driver: its FC step,
/// interleaved and sequential, every word read back (patterns,
/// zero-extended) and every counter equal to the emulator's; `sa_open`
/// checks `FORMAT`. (One pipelining and no host-script run: the random
/// float programs of `testbench/tests/accel_random.rs` cover the RTL.)
#[test]
#[ignore = "needs verilator, gcc"]
fn a_float_fc_step_through_the_c_driver_on_verilator() {
    let out = run(Command::new(env!("CARGO_BIN_EXE_sysgrad"))
        .args(["accel", "--config", "configs/float/fp8_sr_4x4.toml"])
        .args(["--pipelining", "none", "--c-driver"])
        .args(["--m", "9", "--k", "6", "--n", "5"])
        .current_dir(root()));
    for run in ["none interleaved", "none sequential"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("C driver, {run} step")))
            .unwrap_or_else(|| panic!("no C driver line for {run}:\n{out}"));
        assert!(line.contains("counters equal"), "{line}");
    }
}

/// One training step of a small MLP (4x4 array, none and dense
/// pipelining) through the C driver and through the host script, both
/// checked against the emulator.
#[test]
#[ignore = "needs verilator, gcc"]
fn an_mlp_training_step_through_the_c_driver_on_verilator() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny_mlp.toml");
    std::fs::write(
        &model,
        r#"
name = "tiny_mlp"
[array]
rows = 4
cols = 4
[format]
in_bits = 16
acc_bits = 40
frac_bits = 10
[input]
encoding = "analog"
time_steps = 1
[[layers]]
type = "flatten"
[[layers]]
type = "dense"
units = 6
[[layers]]
type = "relu"
[[layers]]
type = "dense"
units = 10
[optimizer]
kind = "sgd"
lr_shift = 10
grad_scale_shift = 4
[training]
epochs = 1
batch_size = 4
seed = 3
test_fraction = 0.2
"#,
    )
    .unwrap();
    // The none and the dense controller (the accelerator's config gives
    // the pipelining; array and format are the model's).
    for pipelining in ["none", "dense"] {
        let accel = dir.path().join(format!("{pipelining}.toml"));
        let text = format!(
            "[array]\nrows = 4\ncols = 4\nbackward = \"interleaved\"\npipelining = \"{pipelining}\"\n\
             [format]\nin_bits = 16\nacc_bits = 40\nfrac_bits = 10\n"
        );
        std::fs::write(&accel, text).unwrap();
        let out = run(Command::new(env!("CARGO_BIN_EXE_sysgrad"))
            .args(["train", "--engine", "rtl", "--steps", "1", "--c-driver"])
            .args(["--gap", "10", "--model"])
            .arg(&model)
            .arg("-c")
            .arg(&accel)
            .current_dir(root()));
        assert!(out.contains("through the C driver (sa_accel.c)"), "{out}");
        assert!(out.contains("counters at 1 checkpoints equal"), "{out}");
        assert!(
            out.contains(&format!(
                "on sa_4x4_i16a40f10_il{}",
                if pipelining == "dense" { "_dense" } else { "," }
            )),
            "{out}"
        );
    }
}

/// The comparison can fail: a word the emulator read back, changed in the
/// session, is reported with its buffer, line and lane.
#[test]
#[ignore = "needs verilator, gcc"]
fn a_changed_word_is_caught_through_the_c_driver() {
    use sysgrad_accel::{encode_program, BufferId, Command as Cmd, HostOp};
    let cfg = load_config(&root().join("configs/accel_8x8.toml")).unwrap();
    let mut setup = sysgrad_testbench::accel::Setup::default();
    let lines: Vec<Vec<i64>> = (0..3)
        .map(|l| (0..8).map(|k| l * 100 - k * 7).collect())
        .collect();
    setup
        .fill(BufferId::Activations, 5, lines)
        .compare(BufferId::Activations, 5, 3);
    let program = encode_program(&[Cmd::Halt]);
    let mut t = sysgrad_testbench::accel::setup_transcript(&cfg, &setup, &program).unwrap();
    let model = sysgrad_testbench::accel::build_c_host(&cfg).unwrap();
    let rep = model.play(&t, 1, 30).unwrap();
    assert_eq!(rep.words_compared, 24);
    for op in &mut t {
        if let HostOp::Read { lines, .. } = op {
            lines[2][6] += 1;
        }
    }
    let e = model.play(&t, 1, 30).unwrap_err().to_string();
    assert!(
        e.contains("activations line 7 lane 6 reads 158 through the driver, 159 in the emulator"),
        "{e}"
    );
}
