//! A bounded fuzzing harness over every parser of user input (issue 28,
//! item 7): configurations (TOML, JSON), model files, SCALE-Sim topologies
//! (CSV) and `.cfg` files, command-stream programs (the assembler) and the
//! digits data set (CSV). The CLI's numeric arguments are fuzzed in
//! `src/fuzz_cli.rs`, where the command line's definition is visible.
//!
//! Inputs are the shipped files, mutated the way careless or hostile
//! users do: a number replaced by an extreme one (0, -1, 2^32, 2^64 - 1,
//! 2^64, 10^30, a 4,000-digit number, NaN, a fraction), a line deleted or
//! doubled, the text cut short or spliced with noise; and arbitrary text.
//!
//! Limits per case: the input is bounded (a few kilobytes, and nothing
//! runs the parsed workload); memory by an allocator that refuses a case's
//! thread more than [`MEMORY`] of live allocations (a parser that sizes a
//! vector by a value, such as a depthwise row of 2^32 channels, stops the
//! test binary at once, printing the case, instead of exhausting the
//! machine); time by running each case on its own thread with a deadline
//! ([`DEADLINE`]): a case that takes longer fails the test naming its
//! input (a hang cannot be killed in-process, so the deadline reports it
//! rather than stopping it). A case passes when the parser
//! returns a value or an error, without a panic; for the configuration and
//! model files (whose messages are this crate's) the error also names the
//! file and stays short.
//!
//! The number of cases per property is `SYSGRAD_FUZZ_CASES` (default 128:
//! under a second in the suite); set it higher for a longer search. The
//! seed is fixed, so the suite tries the same cases on every run.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::io::Write;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// The most time one case may take (generous: a case takes microseconds,
/// the machine may be loaded).
const DEADLINE: Duration = Duration::from_secs(20);

/// The most memory one case's thread may hold.
const MEMORY: usize = 1 << 30;

/// The system allocator, with [`MEMORY`] enforced on the threads that run
/// cases: an allocation beyond it prints the case and fails (the runtime
/// then aborts the test binary: an allocation failure cannot be caught).
struct Budgeted;

thread_local! {
    /// Live bytes of this thread, when it runs a case.
    static LIVE: Cell<Option<usize>> = const { Cell::new(None) };
    /// The input of the case this thread runs (for the report).
    static CASE: RefCell<String> = const { RefCell::new(String::new()) };
}

unsafe impl GlobalAlloc for Budgeted {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let over = LIVE.with(|live| match live.get() {
            Some(n) if n.saturating_add(layout.size()) > MEMORY => true,
            Some(n) => {
                live.set(Some(n + layout.size()));
                false
            }
            None => false,
        });
        if over {
            let _ = CASE.try_with(|c| {
                if let Ok(c) = c.try_borrow() {
                    let mut err = std::io::stderr();
                    let _ = err.write_all(b"\nfuzz case over the memory limit: ");
                    let _ = err.write_all(&c.as_bytes()[..c.len().min(300)]);
                    let _ = err.write_all(b"\n");
                }
            });
            return std::ptr::null_mut();
        }
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.with(|live| {
            if let Some(n) = live.get() {
                live.set(Some(n.saturating_sub(layout.size())));
            }
        });
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: Budgeted = Budgeted;

/// The longest error message a shipped-format parser may give.
const MAX_MESSAGE: usize = 2_000;

fn cases() -> u32 {
    std::env::var("SYSGRAD_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(128)
}

/// A runner with a fixed seed: the suite tries the same cases every time
/// (a failure is reproducible); more cases search further.
fn runner() -> TestRunner {
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

/// Runs `parse` on `input` on its own thread: its result (`Err` with the
/// message, or `Ok`), or a failure naming the input if it panics or
/// passes the deadline.
fn within_deadline(
    input: &str,
    parse: fn(&str) -> Result<(), String>,
) -> Result<Result<(), String>, TestCaseError> {
    let (tx, rx) = mpsc::channel();
    let text = input.to_string();
    let worker = std::thread::spawn(move || {
        CASE.with(|c| *c.borrow_mut() = text.chars().take(300).collect());
        LIVE.with(|live| live.set(Some(0)));
        let r = parse(&text);
        LIVE.with(|live| live.set(None));
        let _ = tx.send(r);
    });
    let shown: String = input.chars().take(300).collect();
    match rx.recv_timeout(DEADLINE) {
        Ok(r) => Ok(r),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(TestCaseError::fail(format!(
            "no answer within {DEADLINE:?} on {shown:?}"
        ))),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let _ = worker.join();
            Err(TestCaseError::fail(format!("panicked on {shown:?}")))
        }
    }
}

/// Numbers users type by mistake or on purpose.
fn extreme_number() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("1".to_string()),
        Just("4294967296".to_string()),
        Just("18446744073709551615".to_string()),
        Just("18446744073709551616".to_string()),
        Just("9223372036854775807".to_string()),
        Just("1000000000000000000000000000000".to_string()),
        Just("9".repeat(4000)),
        Just("nan".to_string()),
        Just("1e308".to_string()),
        Just("0.5".to_string()),
        Just("-0".to_string()),
        Just("0x10".to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        (0u32..70).prop_map(|b| (1u128 << b).to_string()),
    ]
}

/// The spans of the numbers (runs of ASCII digits) in `text`.
fn numbers(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            spans.push((start, i));
        } else {
            i += 1;
        }
    }
    spans
}

/// One mutation of a valid file.
#[derive(Debug, Clone)]
enum Mutation {
    /// Replace the n-th number (modulo their count) by this text.
    Number(usize, String),
    /// Delete the n-th line.
    DeleteLine(usize),
    /// Write the n-th line twice.
    DoubleLine(usize),
    /// Cut the text at this fraction of its length (in characters).
    Truncate(f64),
    /// Insert noise at this fraction of the text.
    Splice(f64, String),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), extreme_number()).prop_map(|(i, n)| Mutation::Number(i, n)),
        1 => any::<usize>().prop_map(Mutation::DeleteLine),
        1 => any::<usize>().prop_map(Mutation::DoubleLine),
        1 => (0.0..1.0f64).prop_map(Mutation::Truncate),
        1 => (0.0..1.0f64, ".{0,16}").prop_map(|(at, s)| Mutation::Splice(at, s)),
    ]
}

fn char_boundary(text: &str, fraction: f64) -> usize {
    let n = text.chars().count();
    let k = ((n as f64) * fraction) as usize;
    text.char_indices().nth(k).map_or(text.len(), |(i, _)| i)
}

fn apply(text: &str, m: &Mutation) -> String {
    let lines: Vec<&str> = text.lines().collect();
    match m {
        Mutation::Number(i, n) => {
            let spans = numbers(text);
            if spans.is_empty() {
                return text.to_string();
            }
            let (a, b) = spans[i % spans.len()];
            format!("{}{n}{}", &text[..a], &text[b..])
        }
        Mutation::DeleteLine(i) if !lines.is_empty() => {
            let k = i % lines.len();
            let kept: Vec<&str> = lines
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != k)
                .map(|(_, l)| *l)
                .collect();
            kept.join("\n")
        }
        Mutation::DoubleLine(i) if !lines.is_empty() => {
            let k = i % lines.len();
            let mut out: Vec<&str> = lines.clone();
            out.insert(k, lines[k]);
            out.join("\n")
        }
        Mutation::Truncate(f) => text[..char_boundary(text, *f)].to_string(),
        Mutation::Splice(f, s) => {
            let at = char_boundary(text, *f);
            format!("{}{s}{}", &text[..at], &text[at..])
        }
        _ => text.to_string(),
    }
}

/// Arbitrary text, or a shipped file with one to three mutations.
fn inputs(samples: Vec<String>) -> impl Strategy<Value = String> {
    let mutated = (
        proptest::sample::select(samples),
        proptest::collection::vec(mutation(), 1..4),
    )
        .prop_map(|(text, ms)| ms.iter().fold(text, |t, m| apply(&t, m)));
    prop_oneof![4 => mutated, 1 => ".{0,512}"]
}

fn read(paths: &[&str]) -> Vec<String> {
    paths
        .iter()
        .map(|p| {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(p);
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .collect()
}

/// Every file with `ext` in `dir` (of the checkout).
fn files(dir: &str, ext: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths: Vec<String> = std::fs::read_dir(root.join(dir))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().into_owned())
        .collect();
    paths.sort();
    read(&paths.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Fuzzes `parse` over `samples`: never a panic or a hang.
fn fuzz(samples: Vec<String>, parse: fn(&str) -> Result<(), String>) {
    runner()
        .run(&inputs(samples), |text| {
            let _ = within_deadline(&text, parse)?;
            Ok(())
        })
        .unwrap();
}

/// A message from this crate's parsers: it names the file and is short.
fn checked_message(r: Result<(), String>, file: &str) -> Result<(), String> {
    if let Err(e) = &r {
        assert!(e.contains(file), "the message does not name {file}: {e}");
        assert!(e.len() <= MAX_MESSAGE, "{} characters: {e:.300}", e.len());
    }
    r
}

#[test]
fn configurations_toml() {
    fuzz(files("configs", "toml"), |text| {
        let r = sysgrad_config::parse_config(text, false, Path::new("fuzz.toml"));
        checked_message(r.map(|_| ()).map_err(|e| e.to_string()), "fuzz.toml")
    });
}

#[test]
fn configurations_json() {
    let json: Vec<String> = files("configs", "toml")
        .iter()
        .map(|t| {
            let cfg = sysgrad_config::parse_config(t, false, Path::new("x.toml")).unwrap();
            serde_json::to_string_pretty(&cfg).unwrap()
        })
        .collect();
    fuzz(json, |text| {
        let r = sysgrad_config::parse_config(text, true, Path::new("fuzz.json"));
        checked_message(r.map(|_| ()).map_err(|e| e.to_string()), "fuzz.json")
    });
}

#[test]
fn model_files() {
    fuzz(files("workloads/models", "toml"), |text| {
        let r = sysgrad_workloads::model::parse_model(text, false, Path::new("fuzz.toml"));
        checked_message(r.map(|_| ()).map_err(|e| e.to_string()), "fuzz.toml")
    });
}

#[test]
fn topologies() {
    let mut samples = files("workloads/topologies", "csv");
    samples.extend(files("workloads/topologies/scalesim3", "csv"));
    fuzz(samples, |text| {
        sysgrad_workloads::scalesim::parse_topology(text, Path::new("fuzz.csv"))
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
}

#[test]
fn scalesim_cfg_files() {
    let mut samples = files("workloads/topologies", "cfg");
    samples.extend(files("workloads/topologies/scalesim3", "cfg"));
    fuzz(samples, |text| {
        let cfg = sysgrad_workloads::scalesim::parse_config(text, Path::new("fuzz.cfg"))
            .map_err(|e| e.to_string())?;
        // The array an accepted file describes is checked, not assumed.
        sysgrad_workloads::scalesim::array_for(&cfg)
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
}

/// A program using every kind of line the assembler reads.
const PROGRAM: &str = "\
# weights, then a forward pass and the backward passes
LOAD_W addr=0 m=4 k=4
LOAD_X addr=0 k=4 n=4
FORWARD x=0 y=16 n=4 acc=0
SYNC
.word 0x0
HALT
";

#[test]
fn programs() {
    let mut samples = vec![PROGRAM.to_string()];
    if let Ok(words) = sysgrad_accel::asm::assemble("LOAD_W addr=0 m=4 k=4\nHALT\n") {
        samples.push(sysgrad_accel::asm::disassemble(&words));
    }
    fuzz(samples, |text| {
        let words = sysgrad_accel::asm::assemble(text).map_err(|e| e.to_string())?;
        // What assembles disassembles, and assembles to the same words.
        let again = sysgrad_accel::asm::assemble(&sysgrad_accel::asm::disassemble(&words))
            .map_err(|e| format!("the disassembly does not assemble: {e}"))?;
        assert_eq!(again, words, "{text}");
        Ok(())
    });
}

#[test]
fn digits_data() {
    // Three samples of the data set's form: 64 pixels (0..=16), a label.
    let line = |seed: usize| {
        let mut fields: Vec<String> = (0..64).map(|i| ((i * 7 + seed) % 17).to_string()).collect();
        fields.push((seed % 10).to_string());
        fields.join(",")
    };
    let text = (0..3).map(line).collect::<Vec<_>>().join("\n") + "\n";
    fuzz(vec![text], |text| {
        sysgrad_workloads::data::parse(text, Path::new("fuzz.csv"))
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
}

/// The harness itself: a panic and a hang are caught, each naming the input.
#[test]
fn the_harness_reports_panics_and_takes_answers() {
    let e = within_deadline("boom", |_| panic!("on purpose")).unwrap_err();
    assert!(e.to_string().contains("panicked on \"boom\""), "{e}");
    assert_eq!(within_deadline("x", |_| Ok(())).unwrap(), Ok(()));
    assert_eq!(
        apply("a = 12\nb = 3\n", &Mutation::Number(1, "-1".into())),
        "a = 12\nb = -1\n"
    );
    assert_eq!(apply("a\nb", &Mutation::DoubleLine(1)), "a\nb\nb");
}
