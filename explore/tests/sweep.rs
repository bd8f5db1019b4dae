//! The design-space sweep: counters agree between the data-free and the
//! data runs, the CSV is rectangular, and interleaving shows up.

use sysgrad_config::{ArrayConfig, Backward};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_emulator::Phase;
use sysgrad_explore::{Grid, Layer, SweepData};

fn layers() -> Vec<Layer> {
    [("fc1", 40, 70, 9), ("conv, 3x3", 16, 144, 25)]
        .iter()
        .map(|&(name, m, k, n)| Layer {
            name: name.to_string(),
            m,
            k,
            n,
        })
        .collect()
}

fn grid(data: SweepData) -> Grid {
    Grid {
        base: ArrayConfig::default_16x16(),
        sizes: vec![(4, 4), (8, 16)],
        in_bits: vec![8, 16],
        schedules: vec![Backward::Interleaved, Backward::Sequential],
        sink: DwSink::Update { lr_shift: 6 },
        data,
    }
}

#[test]
fn counters_do_not_depend_on_data() {
    let counted = sysgrad_explore::sweep(&layers(), &grid(SweepData::Counters)).unwrap();
    let run = sysgrad_explore::sweep(&layers(), &grid(SweepData::Random { seed: 7 })).unwrap();
    assert_eq!(counted.len(), 2 * 2 * 2 * 2);
    for (a, b) in counted.iter().zip(&run) {
        assert_eq!((a.cfg, &a.layer, &a.stats), (b.cfg, &b.layer, &b.stats));
        assert!(a.saturated.is_none() && b.saturated.is_some());
    }
}

#[test]
fn interleaving_saves_backward_cycles() {
    let rows = sysgrad_explore::sweep(&layers(), &grid(SweepData::Counters)).unwrap();
    for pair in rows.chunks(2 * layers().len()) {
        let (il, seq) = pair.split_at(layers().len());
        for (il, seq) in il.iter().zip(seq) {
            assert_eq!(il.cfg.backward(), Backward::Interleaved);
            assert!(il.stats.backward().cycles < seq.stats.backward().cycles);
            assert_eq!(il.stats.phase(Phase::BackwardDx).cycles, 0);
            for row in [il, seq] {
                let u = row.utilization(&Phase::ALL);
                assert!(u > 0.0 && u <= 1.0, "{u}");
            }
        }
    }
}

#[test]
fn csv_is_rectangular_and_quotes_names() {
    let rows = sysgrad_explore::sweep(&layers(), &grid(SweepData::Random { seed: 1 })).unwrap();
    let mut out = Vec::new();
    sysgrad_explore::write_csv(&rows, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), rows.len() + 1);
    // The quoted name holds one comma, which does not separate fields.
    let fields = |l: &str| l.split(',').count() - l.contains('"') as usize;
    for l in &lines {
        assert_eq!(fields(l), fields(lines[0]), "{l}");
    }
    assert!(text.contains("\"conv, 3x3\""));
}

#[test]
fn bad_configurations_are_reported() {
    let mut g = grid(SweepData::Counters);
    g.sizes = vec![(0, 4)];
    assert!(sysgrad_explore::sweep(&layers(), &g).is_err());
}

#[test]
fn svg_has_one_line_per_schedule() {
    let rows = sysgrad_explore::sweep(&layers(), &grid(SweepData::Counters)).unwrap();
    let mut out = Vec::new();
    sysgrad_explore::plot::write_svg(&rows, &mut out).unwrap();
    let svg = String::from_utf8(out).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    // The two data lines are the 2-px ones (axes and legend keys are 1 px).
    assert_eq!(svg.matches(r#"stroke-width="2""#).count(), 2);
    assert!(svg.contains("8x16") && svg.contains("interleaved"));
}

/// Every point keeps what the base configuration says besides its size,
/// format and backward (here its pipelining); a point the base cannot
/// take is refused naming it.
#[test]
fn points_start_from_the_base_configuration() {
    let dense = ArrayConfig::default_16x16()
        .with_pipelining(sysgrad_config::Pipelining::Dense)
        .unwrap();
    let g = Grid {
        base: dense,
        ..grid(SweepData::Counters)
    };
    let cfgs = sysgrad_explore::configs(&g).unwrap();
    assert_eq!(cfgs.len(), 2 * 2 * 2);
    assert!(cfgs.iter().all(|c| c.dense()));
    assert_eq!((cfgs[7].rows(), cfgs[7].cols()), (8, 16));
    let bad = Grid {
        sizes: vec![(0, 4)],
        ..g
    };
    // The point in the message, the configuration's refusal as its source
    // (printed once, after it, by the command line).
    let e = sysgrad_explore::configs(&bad).unwrap_err();
    let cause = std::error::Error::source(&e).unwrap().to_string();
    assert!(
        e.to_string().contains("0x4") && cause.contains("array.rows"),
        "{e}: {cause}"
    );
}
