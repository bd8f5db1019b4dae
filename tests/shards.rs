//! Sharded runs (`--shard I/N`) as a cluster runs them: N processes of the
//! real binary at once, into one folder; `sysgrad merge` of their files
//! gives exactly the files of the unsharded run, byte for byte (the
//! manifest lists the same files and sizes; only its command line, the
//! merge's, differs). Sets of shards that do not belong together are
//! refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sysgrad(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sysgrad"));
    c.args(args).current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn ok(out: Output, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what} failed: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sysgrad-shards-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Every file of `dir` by name, with its bytes (not its subfolders: a
/// soak's builds).
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

/// The `files` list of a folder's manifest.
fn manifest_files(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("MANIFEST.json")).unwrap();
    let m: serde_json::Value = serde_json::from_str(&text).unwrap();
    m["files"].clone()
}

/// What the unsharded run and the merge print, each output folder's path
/// replaced by `OUT`.
struct Printed {
    full: String,
    merged: String,
}

/// Runs `args` unsharded into `full`, as `n` shards at once into
/// `shards`, merges them into `merged`, and checks the folders are equal.
fn check_sharded(name: &str, args: &[&str], n: usize) -> Printed {
    check_sharded_by(name, args, n, shards_as_processes)
}

/// Starts the `n` shards of `args` (each with `--shard I/N -o shards`) as
/// processes of the binary at once, and waits for them.
fn shards_as_processes(args: &[String], n: usize, shards: &Path) {
    let children: Vec<_> = (0..n)
        .map(|i| {
            let mut a = args.to_vec();
            a.extend([
                "--shard".into(),
                format!("{i}/{n}"),
                "-o".into(),
                shards.to_str().unwrap().into(),
            ]);
            sysgrad(&a.iter().map(String::as_str).collect::<Vec<_>>())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, c) in children.into_iter().enumerate() {
        let stdout = ok(c.wait_with_output().unwrap(), &format!("shard {i}/{n}"));
        assert!(stdout.contains(&format!("shard {i}/{n}: ")), "{stdout}");
    }
}

/// [`check_sharded`] with the shards started by `launch(args, n, shards)`.
fn check_sharded_by(
    name: &str,
    args: &[&str],
    n: usize,
    launch: impl Fn(&[String], usize, &Path),
) -> Printed {
    let root = scratch(name);
    let (full, shards, merged) = (root.join("full"), root.join("shards"), root.join("merged"));
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let mut full_args = args.clone();
    full_args.extend(["-o".into(), path(&full)]);
    let full_stdout = ok(
        sysgrad(&full_args.iter().map(String::as_str).collect::<Vec<_>>())
            .output()
            .unwrap(),
        "the unsharded run",
    );
    launch(&args, n, &shards);
    assert_eq!(files(&shards).len(), n, "one file per shard");
    let merged_stdout = ok(
        sysgrad(&["merge", &path(&shards), "-o", &path(&merged)])
            .output()
            .unwrap(),
        "merge",
    );
    let (mut want, mut got) = (files(&full), files(&merged));
    assert_eq!(manifest_files(&full), manifest_files(&merged));
    want.remove("MANIFEST.json");
    got.remove("MANIFEST.json");
    assert!(!want.is_empty());
    assert_eq!(
        want.keys().collect::<Vec<_>>(),
        got.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &want {
        assert!(
            got[name] == *bytes,
            "{name} differs from the unsharded run's"
        );
    }
    std::fs::remove_dir_all(&root).unwrap();
    Printed {
        full: full_stdout.replace(&path(&full), "OUT"),
        merged: merged_stdout.replace(&path(&merged), "OUT"),
    }
}

/// A pipeline study's merge prints what its unsharded run prints: the
/// header, the comparison table and its mean speed-ups (rebuilt from the
/// rows the shards stored), the training rows, the files written.
fn check_sharded_pipeline(name: &str, args: &[&str], n: usize) {
    let printed = check_sharded(name, args, n);
    assert!(
        printed.full.contains("| arrays | schedule |"),
        "{}",
        printed.full
    );
    assert_eq!(printed.merged, printed.full);
}

const SWEEP: &[&str] = &[
    "sweep",
    "--sizes",
    "4x4,8x8,16x16,8x4",
    "--in-bits",
    "8,16",
    "--layers",
    "a:20x30x5,b:7x9x3,c:64x64x16",
];

#[test]
fn a_sharded_sweep_merges_into_the_unsharded_files() {
    // 4 sizes x 2 widths x 2 schedules x 3 layers = 48 points; 5 does not
    // divide them.
    check_sharded("sweep5", SWEEP, 5);
    check_sharded("sweep1", SWEEP, 1);
}

/// A pipeline study of the vgg_small topology on `arrays` with `schedules`.
fn vgg_small<'a>(arrays: &'a str, schedules: &'a str) -> Vec<&'a str> {
    vec![
        "pipeline",
        "--topology",
        "workloads/topologies/vgg_small.csv",
        "--scalesim-config",
        "workloads/topologies/sysgrad_16x16.cfg",
        "--arrays",
        arrays,
        "--schedule",
        schedules,
    ]
}

#[test]
fn a_sharded_pipeline_study_merges_into_the_unsharded_files() {
    // Every schedule of the MLP on 1 and 2 arrays, both backwards.
    let mlp = &[
        "pipeline",
        "--model",
        "workloads/models/mlp.toml",
        "--arrays",
        "1,2",
        "--schedule",
        "all",
    ];
    check_sharded_pipeline("pipeline-mlp", mlp, 3);
    // 3 x 3 x 2 = 18 runs of a convolutional topology.
    check_sharded_pipeline("pipeline-vgg", &vgg_small("2-4", "1f1b,gpipe,zb"), 4);
    // One run only: the merge prints that run's table of arrays.
    let one = &[
        "pipeline",
        "--model",
        "workloads/models/mlp.toml",
        "--arrays",
        "2",
        "--schedule",
        "zb",
        "--backward",
        "sequential",
    ];
    let printed = check_sharded("pipeline-one", one, 2);
    assert!(
        printed.full.contains("| array | layers |"),
        "{}",
        printed.full
    );
    assert_eq!(printed.merged, printed.full);
}

/// `pipeline --train` in shards: each shard trains its runs (beside
/// synchronous training) and stores their rows; the merge prints the
/// training table of the unsharded run, row for row.
#[test]
fn a_sharded_pipeline_training_merges_into_the_unsharded_output() {
    let snn = &[
        "pipeline",
        "--model",
        "workloads/models/snn.toml",
        "--arrays",
        "1,2",
        "--schedule",
        "gpipe,spikepipe,spikepipe-sync",
        "--backward",
        "interleaved",
        "--train",
        "--epochs",
        "1",
        "--max-train",
        "64",
        "--max-test",
        "32",
        "--quiet",
    ];
    let printed = check_sharded("pipeline-train", snn, 4);
    assert!(
        printed.full.contains("| samples per step |") && printed.full.contains("| 2 | spikepipe "),
        "{}",
        printed.full
    );
    assert_eq!(printed.merged, printed.full);
}

/// The shards of a pipeline study run by GNU parallel on this machine
/// (scripts/slurm/parallel-hosts.sh with `:`, the local host, as the
/// host list), merged: the unsharded run's files and printed tables.
#[test]
#[ignore = "needs parallel"]
fn a_study_sharded_by_gnu_parallel_merges_into_the_unsharded_files() {
    let found = Command::new("parallel").arg("--version").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "GNU parallel is not installed (Debian: apt-get install parallel; scripts/setup.sh installs it)"
    );
    let topology = vgg_small("2,3", "1f1b,zb");
    let by_parallel = |args: &[String], n: usize, shards: &Path| {
        let hosts = shards.with_extension("hosts");
        std::fs::write(&hosts, ":\n").unwrap();
        let mut a: Vec<String> = vec![n.to_string(), hosts.to_str().unwrap().into()];
        a.extend(args.iter().cloned());
        a.extend(["-o".into(), shards.to_str().unwrap().into()]);
        let out = Command::new("scripts/slurm/parallel-hosts.sh")
            .args(&a)
            .env("SYSGRAD", env!("CARGO_BIN_EXE_sysgrad"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let stdout = ok(out, "scripts/slurm/parallel-hosts.sh");
        for i in 0..n {
            assert!(stdout.contains(&format!("shard {i}/{n}: ")), "{stdout}");
        }
    };
    let printed = check_sharded_by("parallel", &topology, 3, by_parallel);
    assert_eq!(printed.merged, printed.full);
}

/// The soak's seeds as shards: the same soak.csv (the simulators' builds
/// are cached by configuration, so the shards rebuild nothing).
#[test]
#[ignore = "needs verilator, yosys"]
fn a_sharded_soak_merges_into_the_unsharded_file() {
    check_sharded("soak", &["soak", "--runs", "3", "--max-dim", "3"], 2);
}

#[test]
fn more_shards_than_points_still_merge() {
    let few = &[
        "sweep",
        "--sizes",
        "4x4",
        "--in-bits",
        "8",
        "--layers",
        "a:3x3x3",
    ];
    check_sharded("sweep-many", few, 4);
}

/// Shards of two different sweeps, a missing shard and a duplicated one
/// are refused, exit code 1, each named.
#[test]
fn mismatched_shard_sets_are_refused() {
    let root = scratch("mismatch");
    let run = |extra: &[&str], dir: &str| {
        let mut a = SWEEP.to_vec();
        a.extend_from_slice(extra);
        let out = root.join(dir);
        a.extend_from_slice(&["-o", out.to_str().unwrap()]);
        ok(sysgrad(&a).output().unwrap(), "a shard");
    };
    run(&["--shard", "0/2"], "a");
    run(&["--shard", "1/2", "--backward", "interleaved"], "b");
    run(&["--shard", "1/2"], "c");
    run(&["--shard", "0/3"], "d");
    let file = |dir: &str, i: usize, n: usize| {
        root.join(dir)
            .join(format!("sweep.shard-{i}-of-{n}.json"))
            .to_str()
            .unwrap()
            .to_string()
    };
    let refused = |shards: &[String], expect: &str| {
        let mut a = vec!["merge"];
        a.extend(shards.iter().map(String::as_str));
        let out_dir = root.join("out");
        a.extend_from_slice(&["-o", out_dir.to_str().unwrap()]);
        let out = sysgrad(&a).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(expect), "expected {expect:?} in: {stderr}");
        assert!(!out_dir.join("sweep.csv").exists(), "no partial output");
    };
    refused(&[file("a", 0, 2), file("b", 1, 2)], "job list");
    refused(&[file("a", 0, 2)], "missing 1 of 2 shards: 1/2");
    refused(
        &[file("a", 0, 2), file("c", 1, 2), file("c", 1, 2)],
        "shard 1/2 is given twice",
    );
    refused(&[file("a", 0, 2), file("d", 0, 3)], "number of shards N");
    let empty = root.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    refused(&[empty.to_str().unwrap().to_string()], "no shard files");
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn a_bad_shard_is_a_usage_error() {
    for (shard, expect) in [
        ("2/2", "0 to 1"),
        ("0/0", "at least 1"),
        ("1", "expected I/N"),
    ] {
        let out = sysgrad(&["sweep", "--shard", shard]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expect), "{stderr}");
    }
}

/// A one-node Slurm started on this machine (scripts/slurm/local-cluster.sh:
/// its own munge key, slurm.conf, ports; torn down after), a sweep run as
/// a job array of 4 shards through `sbatch`, merged and compared byte for
/// byte with the unsharded sweep by the script. Needs root (slurmd and
/// munged run as root).
#[test]
#[ignore = "needs slurm-wlm, munge"]
fn a_sweep_sharded_through_a_one_node_slurm_merges_into_the_unsharded_files() {
    let out = Command::new("scripts/slurm/local-cluster.sh")
        .arg("4")
        .env("SYSGRAD", env!("CARGO_BIN_EXE_sysgrad"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = ok(out, "scripts/slurm/local-cluster.sh");
    assert!(
        stdout.contains("the 4 shards run through sbatch merge into the unsharded sweep's files"),
        "{stdout}"
    );
}
