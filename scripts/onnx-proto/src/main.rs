//! `sysgrad-onnx-proto-gen PROTO_DIR OUT_FILE`: compiles `PROTO_DIR/onnx.proto`
//! with protox (no protoc) and writes prost's message types to `OUT_FILE`.

use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, out] = &args[..] else {
        eprintln!("usage: sysgrad-onnx-proto-gen PROTO_DIR OUT_FILE");
        std::process::exit(2);
    };
    let fds = protox::compile(["onnx.proto"], [dir]).unwrap_or_else(|e| {
        eprintln!("{dir}/onnx.proto: {e}");
        std::process::exit(1);
    });
    let tmp = tempdir();
    let mut config = prost_build::Config::new();
    // The message types only: the proto's prose stays in onnx.proto.
    config.disable_comments(["."]);
    config.out_dir(&tmp);
    config
        .compile_fds(fds)
        .unwrap_or_else(|e| panic!("prost-build: {e}"));
    let text = std::fs::read_to_string(tmp.join("onnx.rs")).expect("prost-build wrote onnx.rs");
    std::fs::write(out, text).unwrap_or_else(|e| panic!("{out}: {e}"));
    let _ = std::fs::remove_dir_all(&tmp);
}

fn tempdir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("sysgrad-onnx-proto-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("a temporary folder");
    d
}
