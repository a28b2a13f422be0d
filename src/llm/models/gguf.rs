//! What a GGUF file says about its model, read by llama.cpp's own GGUF parser (the header only:
//! `no_alloc`, no weight is read): the architecture, the name, the parameters (the tensors'
//! elements), the quantisation, the context length and whether it carries a chat template. A
//! value is read only after its stored type is checked (llama.cpp aborts on a wrong one), and a
//! file llama.cpp does not take as GGUF is refused with that said.

use std::ffi::{CStr, CString};
use std::path::Path;

/// A model as its GGUF header describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// `general.architecture` ("llama", "qwen2", "bert").
    pub architecture: String,
    /// `general.name`, if given.
    pub name: Option<String>,
    /// Elements of all its tensors.
    pub parameters: u64,
    /// The quantisation (`general.file_type` in llama.cpp's words, "Q4_K_M"; "?" when unknown).
    pub quantisation: String,
    /// `<architecture>.context_length`, if given.
    pub context_length: Option<u64>,
    /// Whether it carries `tokenizer.chat_template`.
    pub chat_template: bool,
}

impl ModelInfo {
    /// Why it is not a chat model the game can talk with, if it is not: an embedder's or an
    /// encoder's architecture, or no chat template.
    pub fn not_chat(&self) -> Option<String> {
        const NOT_CHAT: [&str; 9] = [
            "bert",
            "nomic-bert",
            "nomic-bert-moe",
            "jina-bert-v2",
            "neo-bert",
            "modern-bert",
            "t5encoder",
            "clip",
            "wavtokenizer-dec",
        ];
        if NOT_CHAT.contains(&self.architecture.as_str()) {
            return Some(format!(
                "not a chat model (architecture {}: an embedder, an encoder or a projector)",
                self.architecture
            ));
        }
        (!self.chat_template)
            .then(|| "no chat template in its header (a base model, not an instruct one?)".into())
    }

    /// Parameters in words: "135M", "3.2B".
    pub fn parameters_words(&self) -> String {
        let p = self.parameters as f64;
        if p >= 1e9 {
            format!("{:.1}B", p / 1e9)
        } else {
            format!("{:.0}M", p / 1e6)
        }
    }
}

/// llama.cpp's name of a `general.file_type` (its `llama_ftype`).
pub fn file_type_name(t: u32) -> &'static str {
    match t {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        36 => "TQ1_0",
        37 => "TQ2_0",
        38 => "MXFP4_MOE",
        _ => "?",
    }
}

/// A GGUF header opened by llama.cpp (freed when dropped).
struct Header(*mut llama_cpp_sys_2::gguf_context);

impl Drop for Header {
    fn drop(&mut self) {
        // SAFETY: the pointer came from gguf_init_from_file, not null, freed once.
        unsafe { llama_cpp_sys_2::gguf_free(self.0) }
    }
}

impl Header {
    fn open(path: &Path) -> Result<Self, String> {
        let c = path
            .to_str()
            .and_then(|p| CString::new(p).ok())
            .ok_or("its path is not UTF-8 text")?;
        let params = llama_cpp_sys_2::gguf_init_params {
            no_alloc: true,
            ctx: std::ptr::null_mut(),
        };
        // SAFETY: a valid C string; with no_alloc and no ggml context asked, only the header is
        // read; null is returned for any file llama.cpp does not take.
        let ctx = unsafe { llama_cpp_sys_2::gguf_init_from_file(c.as_ptr(), params) };
        if ctx.is_null() {
            return Err("not a GGUF file llama.cpp can read".into());
        }
        Ok(Self(ctx))
    }

    /// The index of `key` whose value has the type `ty`.
    fn find(&self, key: &str, ty: llama_cpp_sys_2::gguf_type) -> Option<i64> {
        let k = CString::new(key).ok()?;
        // SAFETY: a live context and a valid C string; the index is checked before use.
        let i = unsafe { llama_cpp_sys_2::gguf_find_key(self.0, k.as_ptr()) };
        // SAFETY: i is a valid index (>= 0) of this context.
        (i >= 0 && unsafe { llama_cpp_sys_2::gguf_get_kv_type(self.0, i) } == ty).then_some(i)
    }

    fn string(&self, key: &str) -> Option<String> {
        let i = self.find(key, llama_cpp_sys_2::GGUF_TYPE_STRING)?;
        // SAFETY: the value at i is a string (checked); llama.cpp keeps it while ctx lives.
        let p = unsafe { llama_cpp_sys_2::gguf_get_val_str(self.0, i) };
        // SAFETY: a NUL-terminated string owned by the context, copied at once.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    fn unsigned(&self, key: &str) -> Option<u64> {
        if let Some(i) = self.find(key, llama_cpp_sys_2::GGUF_TYPE_UINT32) {
            // SAFETY: the value at i is a u32 (checked).
            return Some(unsafe { llama_cpp_sys_2::gguf_get_val_u32(self.0, i) } as u64);
        }
        let i = self.find(key, llama_cpp_sys_2::GGUF_TYPE_UINT64)?;
        // SAFETY: the value at i is a u64 (checked).
        Some(unsafe { llama_cpp_sys_2::gguf_get_val_u64(self.0, i) })
    }

    /// Elements of all the tensors (each tensor's bytes over its type's bytes per block, times
    /// the elements a block holds).
    fn parameters(&self) -> u64 {
        // SAFETY: a live context.
        let n = unsafe { llama_cpp_sys_2::gguf_get_n_tensors(self.0) };
        (0..n.max(0))
            .map(|t| {
                // SAFETY: t is a valid tensor index of this context; the type's sizes are
                // ggml's constants for a type the parser accepted.
                unsafe {
                    let ty = llama_cpp_sys_2::gguf_get_tensor_type(self.0, t);
                    let bytes = llama_cpp_sys_2::gguf_get_tensor_size(self.0, t) as u64;
                    let per_block = llama_cpp_sys_2::ggml_type_size(ty) as u64;
                    let block = llama_cpp_sys_2::ggml_blck_size(ty).max(1) as u64;
                    bytes / per_block.max(1) * block
                }
            })
            .sum()
    }
}

/// The file's `general.file_type`, read from its header alone (None when it has none or the
/// file cannot be read as GGUF).
pub fn file_type(path: &Path) -> Option<u32> {
    let t = Header::open(path).ok()?.unsigned("general.file_type")?;
    u32::try_from(t).ok()
}

/// The model's blocks (`<architecture>.block_count`), from its header alone (None when it has
/// none or the file cannot be read as GGUF).
pub fn block_count(path: &Path) -> Option<u32> {
    let h = Header::open(path).ok()?;
    let arch = h.string("general.architecture")?;
    u32::try_from(h.unsigned(&format!("{arch}.block_count"))?).ok()
}

/// What the GGUF file at `path` says about its model.
pub fn read(path: &Path) -> Result<ModelInfo, String> {
    let h = Header::open(path)?;
    let architecture = h
        .string("general.architecture")
        .ok_or("its header names no architecture (general.architecture)")?;
    Ok(ModelInfo {
        name: h.string("general.name"),
        parameters: h.parameters(),
        quantisation: h
            .unsigned("general.file_type")
            .map_or("?", |t| file_type_name(t as u32))
            .to_string(),
        context_length: h.unsigned(&format!("{architecture}.context_length")),
        chat_template: h.string("tokenizer.chat_template").is_some(),
        architecture,
    })
}
