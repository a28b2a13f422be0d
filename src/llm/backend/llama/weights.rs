//! The form llama.cpp reads a model's weights in (`weights` in the backend's config): a file of a
//! type the CPU kernels read slowly (Q4_1, Q5_0, Q5_1) is converted once to Q8_0 beside it, and
//! the copy is read from then on. Q8_0 holds a Q4_1 block's values to within rounding (8 bits
//! against 4, a scale per block of 32); on the 2-core development machine SmolLM2-135M read
//! prompts about 1.8× and wrote 8 sequences about 1.5× faster with the same perplexity.
//!
//! The copy is written under a name of its own and renamed into place, so a crash or a second
//! process converting at the same time never leaves a half-written model where one is read.

use crate::llm::config::Weights;
use std::ffi::CString;
use std::path::{Path, PathBuf};

/// llama.cpp's file types (`general.file_type`) whose weights are converted.
const SLOW_TYPES: [u32; 3] = [
    llama_cpp_sys_2::LLAMA_FTYPE_MOSTLY_Q4_1 as u32,
    llama_cpp_sys_2::LLAMA_FTYPE_MOSTLY_Q5_0 as u32,
    llama_cpp_sys_2::LLAMA_FTYPE_MOSTLY_Q5_1 as u32,
];

/// The copy's path: `<stem>.q8_0.gguf` beside the file.
pub fn converted_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    path.with_file_name(format!("{stem}.q8_0.gguf"))
}

/// A path as llama.cpp takes it.
fn c_path(path: &Path) -> Result<CString, String> {
    CString::new(path.to_string_lossy().as_bytes()).map_err(|e| e.to_string())
}

/// The file's `general.file_type`, read from its header alone (None when it has none or cannot
/// be read: the file is then read as it is).
pub fn file_type(path: &Path) -> Option<u32> {
    crate::llm::models::gguf::file_type(path)
}

/// The file llama.cpp is to read for `path` under `weights`, and whether it must first be made.
pub fn planned(path: &Path, weights: Weights) -> (PathBuf, bool) {
    if weights == Weights::AsFile || !file_type(path).is_some_and(|t| SLOW_TYPES.contains(&t)) {
        return (path.to_path_buf(), false);
    }
    let copy = converted_path(path);
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let fresh = match (modified(&copy), modified(path)) {
        (Some(c), Some(s)) => c >= s,
        _ => false,
    };
    (copy, !fresh)
}

/// The file to load: the Q8_0 copy (made now if it is missing or older than the file), or the
/// file itself under `AsFile`, for other types, or when the copy cannot be written (said on
/// stderr: the model still runs, only slower).
pub fn prepare(path: &Path, weights: Weights, threads: u32) -> PathBuf {
    let (target, make) = planned(path, weights);
    if !make {
        return target;
    }
    let started = std::time::Instant::now();
    match convert(path, &target, threads) {
        Ok(()) => {
            eprintln!(
                "converted {} to Q8_0 for this CPU in {:.1} s (once): {}",
                path.display(),
                started.elapsed().as_secs_f32(),
                target.display()
            );
            target
        }
        Err(e) => {
            eprintln!(
                "warning: cannot convert {} to Q8_0 ({e}); reading it as it is (slower); set `weights: AsFile` in the llama backend's config to stop trying",
                path.display()
            );
            path.to_path_buf()
        }
    }
}

/// Writes the Q8_0 copy under a name of this process's own, then renames it into place.
fn convert(src: &Path, dst: &Path, threads: u32) -> Result<(), String> {
    crate::llm::backend::llama::global_backend()?;
    let tmp = dst.with_file_name(format!(
        ".{}.{}.part",
        dst.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let (c_src, c_tmp) = (c_path(src)?, c_path(&tmp)?);
    // SAFETY: the parameters come from llama.cpp's own defaults with three plain fields set; both
    // paths are NUL-terminated and outlive the call.
    let rc = unsafe {
        let mut p = llama_cpp_sys_2::llama_model_quantize_default_params();
        p.ftype = llama_cpp_sys_2::LLAMA_FTYPE_MOSTLY_Q8_0;
        p.allow_requantize = true;
        p.nthread = threads.max(1) as i32;
        llama_cpp_sys_2::llama_model_quantize(c_src.as_ptr(), c_tmp.as_ptr(), &p)
    };
    if rc != 0 {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("llama.cpp's converter returned {rc}"));
    }
    std::fs::rename(&tmp, dst).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot move the copy into place: {e}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_sits_beside_the_file_under_its_own_name() {
        assert_eq!(
            converted_path(Path::new("models/SmolLM2-135M-Instruct.Q4_1.gguf")),
            Path::new("models/SmolLM2-135M-Instruct.Q4_1.q8_0.gguf")
        );
    }

    #[test]
    fn a_file_that_is_not_a_model_is_read_as_it_is() {
        let dir = std::env::temp_dir().join(format!("weights-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("x.gguf");
        std::fs::write(&f, b"GGUF not really").unwrap();
        assert_eq!(planned(&f, Weights::Q8_0), (f.clone(), false));
        assert_eq!(planned(&f, Weights::AsFile), (f.clone(), false));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
