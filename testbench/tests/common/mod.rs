//! Accelerator configurations the co-simulation tests share. The same
//! configuration gives the same Verilog, so the tests reuse one cached
//! Verilator build of each.

#![allow(dead_code)] // each test file uses some of them

use sysgrad_config::{ArrayConfig, Backward, BufferDepths, NumberFormat};

fn accel(
    (rows, cols, backward): (usize, usize, Backward),
    (in_bits, acc_bits, frac_bits): (u32, u32, u32),
    [weights, activations, gradients, accumulators, commands]: [usize; 5],
) -> ArrayConfig {
    let mut cfg = ArrayConfig::new(
        rows,
        cols,
        backward,
        NumberFormat {
            in_bits,
            acc_bits,
            frac_bits,
        },
    );
    cfg.buffers = BufferDepths {
        weights,
        activations,
        gradients,
        accumulators,
        commands,
    };
    cfg
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
