//! The build's source fingerprint: FNV-1a (64 bits) over the crate's code as built (`src/`, the
//! vendored crates, `Cargo.toml`, `Cargo.lock`), each file by its path and bytes in path order.
//! Given to the crate as `SIMULACRA_SOURCE`: `simulacra --version` shows it, and a lab run
//! records it so that a resume under other code is refused (`src/lab/guard.rs`).

use std::path::{Path, PathBuf};

const INPUTS: [&str; 4] = ["src", "vendor", "Cargo.toml", "Cargo.lock"];

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let mut files = Vec::new();
    for input in INPUTS {
        println!("cargo:rerun-if-changed={input}");
        collect(&root.join(input), &mut files);
    }
    println!("cargo:rerun-if-changed=build.rs");
    let mut named: Vec<(String, PathBuf)> = files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&root).unwrap_or(&p).to_string_lossy();
            (rel.replace('\\', "/"), p)
        })
        .collect();
    named.sort();
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h = (h ^ *b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for (rel, path) in &named {
        feed(rel.as_bytes());
        feed(&[0]);
        feed(&std::fs::read(path).unwrap_or_default());
        feed(&[0]);
    }
    println!("cargo:rustc-env=SIMULACRA_SOURCE={h:016x}");
}

/// The files under `p` (or `p` itself), without hidden ones.
fn collect(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_file() {
        out.push(p.to_path_buf());
        return;
    }
    let Ok(rd) = std::fs::read_dir(p) else {
        return;
    };
    for e in rd.flatten() {
        if !e.file_name().to_string_lossy().starts_with('.') {
            collect(&e.path(), out);
        }
    }
}
