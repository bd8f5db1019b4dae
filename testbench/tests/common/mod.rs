//! Accelerator configurations the co-simulation tests share. The same
//! configuration gives the same Verilog, so the tests reuse one cached
//! Verilator build of each.

#![allow(dead_code)] // each test file uses some of them

use sysgrad_accel::*;
use sysgrad_config::{fixed, ArrayConfig, Backward, BufferDepths, NumberFormat};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_testbench::accel::{self, AccelModel, Setup};

fn accel(
    (rows, cols, backward): (usize, usize, Backward),
    (in_bits, acc_bits, frac_bits): (u32, u32, u32),
    [weights, activations, gradients, accumulators, commands]: [usize; 5],
) -> ArrayConfig {
    ArrayConfig::new(
        rows,
        cols,
        backward,
        NumberFormat {
            in_bits,
            acc_bits,
            frac_bits,
        },
    )
    .and_then(|cfg| {
        cfg.with_buffers(BufferDepths {
            weights,
            activations,
            gradients,
            accumulators,
            commands,
        })
    })
    .unwrap()
}

/// mid_8x8 (8 x 8 interleaved, i16 a40 f8) with small buffers; the
/// accumulator buffer holds Y, dX and the drained dW^T of a 100 x 70 layer
/// (configs/accel_8x8.toml).
pub fn square() -> ArrayConfig {
    accel(
        (8, 8, Backward::Interleaved),
        (16, 40, 8),
        [1024, 1024, 1024, 2048, 1024],
    )
}

/// `cfg` with the dense controller and array.
pub fn dense(cfg: ArrayConfig) -> ArrayConfig {
    cfg.with_pipelining(sysgrad_config::Pipelining::Dense)
        .unwrap()
}

/// seq_3x5 (3 x 5 sequential, i6 a16 f2): R != C, one multiplier per PE.
pub fn sequential() -> ArrayConfig {
    accel(
        (3, 5, Backward::Sequential),
        (6, 16, 2),
        [256, 256, 256, 256, 256],
    )
}

/// A small 3 x 2 interleaved array (i8 a20 f4), quick to build.
pub fn small() -> ArrayConfig {
    accel(
        (3, 2, Backward::Interleaved),
        (8, 20, 4),
        [64, 64, 64, 128, 256],
    )
}

/// Small deterministic data (|v| <= 8).
fn data(c: &ArrayConfig, seed: i64) -> impl FnMut(usize, usize) -> ndarray::Array2<i64> + '_ {
    let mut v = seed;
    move |rows, cols| {
        ndarray::Array2::from_shape_fn((rows, cols), |_| {
            v = (v * 37 + 11) % 251;
            fixed::sat(v % 17 - 8, c.format().in_bits)
        })
    }
}

/// `lines` lines of `lanes` small nonzero values.
pub fn junk(lines: usize, lanes: usize) -> Vec<Vec<i64>> {
    (0..lines)
        .map(|l| {
            (0..lanes)
                .map(|k| (l * 7 + k * 3) as i64 % 23 - 11)
                .collect()
        })
        .collect()
}

/// A training step of a 5 x 7 layer (N = 4) with REQUANT of the last Y
/// line after the FORWARD that writes it (the forwarding case: the REQUANT reads the line in the cycle it is
/// written). Small values (|v| <= 8), so that requantized sums do not all
/// saturate and a stale line reads differently from the new one.
pub fn training_step(c: &ArrayConfig) -> (Setup, Vec<u64>) {
    let layer = FcLayer::new(c, 5, 7, 4);
    let mut d = data(c, 7);
    let mut setup = Setup::default();
    setup
        .fill_blocked_padded(BufferId::Weights, &layer.w, d(5, 7).view(), 5)
        .fill_blocked_padded(BufferId::Activations, &layer.x, d(7, 4).view(), -9)
        .fill_blocked_padded(BufferId::Gradients, &layer.dy, d(5, 4).view(), 3)
        // Every line read back is written first: a buffer line nothing
        // wrote reads X under Icarus (sa_buffer's memory has no initial
        // value), 0 under Verilator and in the emulator.
        .fill(BufferId::Gradients, layer.dy.end(), vec![vec![-2, 6]])
        .fill(
            BufferId::Accumulators,
            0,
            junk(layer.dx.end().max(layer.y.end()), 3),
        )
        .compare_blocked(BufferId::Weights, &layer.w)
        .compare_blocked(BufferId::Accumulators, &layer.y)
        .compare_blocked(BufferId::Accumulators, &layer.dx)
        .compare(BufferId::Gradients, layer.dy.end(), 1);
    let mut prog = compile_forward(c, &layer).unwrap();
    prog.push(Command::Requant {
        src: layer.y.end() as u16 - 1,
        dst: DataBuffer::Gradients,
        dst_addr: layer.dy.end() as u16,
        count: 1,
    });
    prog.extend(
        compile_layer(
            c,
            &layer,
            Backward::Interleaved,
            DwSink::Update { lr_shift: 2 },
        )
        .unwrap(),
    );
    (setup, encode_program(&prog))
}

/// The Verilog of `cfg` with `from` replaced by `to` in `sa_accel.v` (a
/// fault injected on purpose); `from` must occur exactly once.
/// [`with_fault`] within the declaration of the wire `net` only (so that
/// the fault site does not spell out widths the generator derives).
pub fn with_fault_in(
    cfg: &ArrayConfig,
    net: &str,
    from: &str,
    to: &str,
) -> Vec<sysgrad_hdl::VerilogFile> {
    let text = sysgrad_hdl::generate(cfg)
        .into_iter()
        .find(|f| f.name == "sa_accel.v")
        .expect("sa_accel.v generated")
        .text;
    let line = sysgrad_hdl::wire_declaration(&text, net)
        .unwrap_or_else(|| panic!("no wire {net} in sa_accel.v"));
    assert!(line.contains(from), "`{from}` is not in `{line}`");
    with_fault(cfg, line, &line.replacen(from, to, 1))
}

pub fn with_fault(cfg: &ArrayConfig, from: &str, to: &str) -> Vec<sysgrad_hdl::VerilogFile> {
    let mut files = sysgrad_hdl::generate(cfg);
    let top = files
        .iter_mut()
        .find(|f| f.name == "sa_accel.v")
        .expect("sa_accel.v generated");
    assert_eq!(
        top.text.matches(from).count(),
        1,
        "the fault site `{from}` is not unique in sa_accel.v"
    );
    top.text = top.text.replace(from, to);
    files
}

/// ACT `func` from `src` into `dst` at `dst_addr`, `count` lines, `lanes`
/// lanes, reading the mask at `mask` (ignored unless `relu_grad`).
pub fn act(
    func: ActFunction,
    (src, dst, dst_addr, count): (u16, DataBuffer, u16, u16),
    mask: u16,
    lanes: u16,
) -> Command {
    Command::Act {
        func,
        src,
        dst,
        dst_addr,
        count,
        mask,
        lanes,
    }
}

/// Every lane of `dst` on `c`.
pub fn lanes_of(c: &ArrayConfig, dst: DataBuffer) -> u16 {
    match dst {
        DataBuffer::Activations => c.rows() as u16,
        DataBuffer::Gradients => c.cols() as u16,
    }
}

/// A program of every ACT function on a FORWARD's Y (both signs), on an
/// array with buffers of at least 64 lines: identity right after the
/// FORWARD that writes the line (the forwarding case), relu into the
/// activations on all lanes and on fewer (the lanes past `lanes` keep
/// their junk, as a bias row of ones would), relu_grad into the
/// gradients gated by that relu's output (written by the command before)
/// and by X itself (negative, zero and positive mask words), identity
/// with fewer lanes, ACT right after LOAD_W (never marked swap on the
/// dense controller), REQUANT between ACTs, SYNC, HALT. Every line the
/// commands write and the lines around them are compared.
pub fn act_program(c: &ArrayConfig) -> (Setup, Vec<u64>) {
    use ActFunction::*;
    use DataBuffer::*;
    let (r, cols) = (c.rows(), c.cols());
    let mut d = data(c, 13);
    let n = 6;
    let mut setup = Setup::default();
    let x: Vec<Vec<i64>> = d(n, r).rows().into_iter().map(|v| v.to_vec()).collect();
    let w: Vec<Vec<i64>> = d(r, cols).rows().into_iter().map(|v| v.to_vec()).collect();
    // X has zeros as well as both signs, so that a mask word of 0 gates.
    let x: Vec<Vec<i64>> = x
        .into_iter()
        .enumerate()
        .map(|(t, l)| {
            l.into_iter()
                .enumerate()
                .map(|(k, v)| if (t + k) % 4 == 0 { 0 } else { v })
                .collect()
        })
        .collect();
    let la = r.max(cols);
    setup
        .fill(BufferId::Weights, 0, w)
        .fill(BufferId::Activations, 0, x)
        .fill(BufferId::Activations, n, junk(64 - n, r))
        .fill(BufferId::Gradients, 0, junk(64, cols))
        .fill(BufferId::Accumulators, 0, junk(32, la))
        .compare(BufferId::Activations, 0, 64)
        .compare(BufferId::Gradients, 0, 64)
        .compare(BufferId::Accumulators, 0, 32);
    let (rl, cl) = (r as u16, cols as u16);
    let few = |l: u16| (l - 1).max(1);
    let fwd = |y_addr, acc| Command::Forward {
        x_addr: 0,
        y_addr,
        n: n as u16,
        accumulate: acc,
        window: false,
    };
    let load = Command::LoadW {
        addr: 0,
        m: cols as u16,
        k: r as u16,
    };
    let prog = [
        load,
        fwd(0, false),
        act(Identity, (n as u16 - 1, Gradients, 8, 1), 0, cl),
        act(Relu, (0, Activations, 10, n as u16), 0, rl),
        act(Relu, (0, Activations, 20, n as u16), 0, few(rl)),
        act(ReluGrad, (0, Gradients, 12, n as u16), 20, few(rl).min(cl)),
        act(ReluGrad, (0, Gradients, 20, n as u16), 0, rl.min(cl)),
        act(Identity, (2, Activations, 30, 3), 0, few(rl)),
        Command::Requant {
            src: 1,
            dst: Gradients,
            dst_addr: 30,
            count: 2,
        },
        act(Relu, (1, Gradients, 33, 4), 0, few(cl)),
        load,
        act(ReluGrad, (16, Gradients, 40, 8), 8, cl.min(rl)),
        fwd(16, true),
        act(Relu, (16, Activations, 40, n as u16), 0, rl),
        Command::Sync,
        Command::Halt,
    ];
    (setup, encode_program(&prog))
}

/// One Verilator build per configuration and test binary, shared by its
/// tests (and cached on disk across binaries).
pub fn model(c: ArrayConfig) -> &'static AccelModel {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static MODELS: OnceLock<Mutex<HashMap<String, &'static AccelModel>>> = OnceLock::new();
    let models = MODELS.get_or_init(Default::default);
    let key = format!("{c:?}");
    if let Some(m) = models.lock().expect("models").get(&key) {
        return m;
    }
    // Built outside the lock, so that tests on other configurations go on.
    let built: &'static AccelModel =
        Box::leak(Box::new(accel::build(&c).unwrap_or_else(|e| panic!("{e}"))));
    models.lock().expect("models").entry(key).or_insert(built)
}

/// LOAD_W of a whole tile at line 0, then a FORWARD of `n` lines from X
/// at line 0 into Y at line 0: real work before a command under test.
pub fn loaded_forward(c: &ArrayConfig, n: u16) -> [Command; 2] {
    [
        Command::LoadW {
            addr: 0,
            m: c.cols() as u16,
            k: c.rows() as u16,
        },
        Command::Forward {
            x_addr: 0,
            y_addr: 0,
            n,
            accumulate: false,
            window: false,
        },
    ]
}
