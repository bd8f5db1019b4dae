//! The command line's numeric arguments, fuzzed (issue 28, item 7; the
//! file parsers are fuzzed in `tests/fuzz_parsers.rs`). Every flag of
//! every subcommand that takes a free value (not a fixed list of names) is
//! given extreme numbers and noise, alone and three at a time: clap
//! accepts the value or refuses it with a message that, cut as `main`
//! prints it, stays short; it never panics. Running what is accepted is
//! left to the subcommands' own tests: with unbounded values that is where
//! the budgets of `src/args.rs` apply.

use crate::cli::Cli;
use clap::{CommandFactory, Parser};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// Every (subcommand, `--flag`) that takes a free value.
fn valued_flags() -> Vec<(String, String)> {
    let cli = Cli::command();
    let mut out = Vec::new();
    for sub in cli.get_subcommands() {
        for arg in sub.get_arguments() {
            let (Some(long), true) = (arg.get_long(), arg.get_action().takes_values()) else {
                continue;
            };
            if arg.get_possible_values().is_empty() {
                out.push((sub.get_name().to_string(), format!("--{long}")));
            }
        }
    }
    out
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("4294967296".to_string()),
        Just("18446744073709551615".to_string()),
        Just("18446744073709551616".to_string()),
        Just("1e308".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("2-1".to_string()),
        Just("4x0".to_string()),
        Just("0,0".to_string()),
        Just("1-18446744073709551615".to_string()),
        Just("9".repeat(5000)),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|n| n.to_string()),
        "[ -~]{0,12}",
    ]
}

/// Parses `args`: never a panic; a refusal's message, cut, is short.
fn parses_or_refuses(args: &[String]) -> Result<(), TestCaseError> {
    let argv = std::iter::once("sysgrad".to_string()).chain(args.iter().cloned());
    let parsed = std::panic::catch_unwind(|| Cli::try_parse_from(argv).map(|_| ()));
    match parsed {
        Err(_) => Err(TestCaseError::fail(format!(
            "clap panicked on {args:.300?}"
        ))),
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => {
            let shown = sysgrad_config::cut_long_lines(&e.to_string());
            prop_assert!(shown.len() < 4000, "{} characters", shown.len());
            Ok(())
        }
    }
}

#[test]
fn numeric_arguments_are_parsed_or_refused() {
    let flags = valued_flags();
    assert!(flags.len() > 40, "{} flags", flags.len());
    assert!(flags.contains(&("cosim".into(), "--runs".into())));
    // Each flag once with every fixed value.
    for (sub, flag) in &flags {
        for v in ["0", "-1", "18446744073709551616", &"9".repeat(5000)] {
            parses_or_refuses(&[sub.clone(), flag.clone(), v.to_string()]).unwrap();
        }
    }
    let cases = std::env::var("SYSGRAD_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let subs: Vec<String> = Cli::command()
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    let strategy = (
        proptest::sample::select(subs),
        proptest::collection::vec((proptest::sample::select(flags), value()), 1..4),
    );
    runner
        .run(&strategy, |(sub, pairs)| {
            let mut args = vec![sub.clone()];
            for ((s, flag), v) in pairs {
                // Flags of this subcommand, plus now and then another's.
                if s == sub || v.len() % 3 == 0 {
                    args.extend([flag, v]);
                }
            }
            parses_or_refuses(&args)
        })
        .unwrap();
    // Found by this harness: a range of 2^64 array counts was listed
    // (a capacity overflow panic).
    let e = Cli::try_parse_from(["sysgrad", "pipeline", "--arrays", "1-18446744073709551615"])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("at most at 64 arrays"), "{e}");
    // And the cut the program applies keeps clap's message whole when short.
    let e = Cli::try_parse_from(["sysgrad", "cosim", "--runs", "0"])
        .err()
        .unwrap()
        .to_string();
    assert_eq!(sysgrad_config::cut_long_lines(&e), e);
}
