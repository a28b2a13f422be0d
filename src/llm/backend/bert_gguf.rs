//! A sentence-transformers BERT folder (`config.json`, `tokenizer.json`, `model.safetensors`, as
//! set-up fetches all-MiniLM-L6-v2) written as one GGUF file that llama.cpp loads as its `bert`
//! architecture, so the embedder runs on the llama.cpp the game already builds. The weights are
//! copied as they are (F32, F16 or BF16), the WordPiece vocabulary in llama.cpp's form (a word's
//! first piece after a phantom space, `##` pieces bare), the tokenizer's lowercasing and
//! accent stripping as its normalizer options; the pooler is left out (mean pooling is asked for).
//! Written once beside the folder's files (again when they are newer), atomically.

use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The file written in the model folder (the number changes when the conversion does).
pub const GGUF_NAME: &str = "model.v1.gguf";

/// llama.cpp's mean pooling.
const POOLING_MEAN: u32 = 1;

/// The GGUF file of a BERT folder, written first when missing or older than the folder's files.
pub fn gguf_for(dir: &Path) -> Result<PathBuf, String> {
    let out = dir.join(GGUF_NAME);
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let fresh = modified(&out).is_some_and(|t| {
        crate::llm::model_files::MODEL_FILES
            .iter()
            .all(|f| modified(&dir.join(f)).is_some_and(|s| s <= t))
    });
    if fresh {
        return Ok(out);
    }
    let bytes = convert(dir)?;
    // A name of its own per process, then one rename: two programs converting at once each
    // leave a whole file.
    let part = dir.join(format!("{GGUF_NAME}.{}.part", std::process::id()));
    let written = std::fs::File::create(&part)
        .and_then(|mut f| f.write_all(&bytes).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::rename(&part, &out));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&part);
        return Err(format!(
            "cannot write the embedder's llama.cpp file {}: {e}",
            out.display()
        ));
    }
    Ok(out)
}

/// The GGUF bytes of a BERT folder.
pub fn convert(dir: &Path) -> Result<Vec<u8>, String> {
    let read = |f: &str| {
        std::fs::read(dir.join(f))
            .map_err(|e| format!("cannot read {}: {e}", dir.join(f).display()))
    };
    let json = |f: &str| -> Result<Value, String> {
        serde_json::from_slice(&read(f)?).map_err(|e| format!("{}: {e}", dir.join(f).display()))
    };
    let config = json("config.json")?;
    let tokenizer = json("tokenizer.json")?;
    let weights = read("model.safetensors")?;
    let at = |field: &str| format!("{}: field {field}", dir.join("config.json").display());
    let num = |field: &str| -> Result<u64, String> {
        config[field]
            .as_u64()
            .ok_or_else(|| format!("{}: missing or not a whole number", at(field)))
    };
    let mut g = Gguf::default();
    g.string("general.architecture", "bert");
    let name = dir
        .file_name()
        .map(|f| f.to_string_lossy().to_string())
        .unwrap_or_else(|| "bert".into());
    g.string("general.name", &name);
    g.u32(
        "bert.context_length",
        num("max_position_embeddings")? as u32,
    );
    g.u32("bert.embedding_length", num("hidden_size")? as u32);
    g.u32("bert.feed_forward_length", num("intermediate_size")? as u32);
    g.u32("bert.block_count", num("num_hidden_layers")? as u32);
    g.u32(
        "bert.attention.head_count",
        num("num_attention_heads")? as u32,
    );
    let eps = config["layer_norm_eps"].as_f64().unwrap_or(1e-12) as f32;
    g.f32("bert.attention.layer_norm_epsilon", eps);
    g.bool("bert.attention.causal", false);
    g.u32("bert.pooling_type", POOLING_MEAN);
    vocabulary(&mut g, &tokenizer, num("vocab_size")? as usize, dir)?;
    g.u32(
        "tokenizer.ggml.token_type_count",
        config["type_vocab_size"].as_u64().unwrap_or(2) as u32,
    );
    tensors(&mut g, &weights, &dir.join("model.safetensors"))?;
    Ok(g.bytes())
}

/// The WordPiece vocabulary in llama.cpp's `bert` form.
fn vocabulary(g: &mut Gguf, tokenizer: &Value, size: usize, dir: &Path) -> Result<(), String> {
    let file = dir.join("tokenizer.json");
    let model = &tokenizer["model"];
    if model["type"].as_str() != Some("WordPiece") {
        return Err(format!(
            "{}: field model.type: a WordPiece tokenizer is needed, found {}",
            file.display(),
            model["type"]
        ));
    }
    let vocab = model["vocab"]
        .as_object()
        .ok_or_else(|| format!("{}: field model.vocab: missing", file.display()))?;
    let mut tokens: Vec<Option<String>> = vec![None; size.max(vocab.len())];
    for (t, id) in vocab {
        let id = id
            .as_u64()
            .map(|i| i as usize)
            .filter(|i| *i < tokens.len());
        let Some(id) = id else {
            return Err(format!(
                "{}: field model.vocab: the id of {t:?} is not below {}",
                file.display(),
                tokens.len()
            ));
        };
        tokens[id] = Some(t.clone());
    }
    // Added tokens: control tokens when special, user-defined otherwise.
    let mut kinds: BTreeMap<usize, i32> = BTreeMap::new();
    let mut special: BTreeMap<String, usize> = BTreeMap::new();
    for a in tokenizer["added_tokens"].as_array().into_iter().flatten() {
        let (Some(id), Some(content)) = (a["id"].as_u64(), a["content"].as_str()) else {
            continue;
        };
        let id = id as usize;
        if id < tokens.len() {
            tokens[id] = Some(content.to_string());
            let is_special = a["special"].as_bool().unwrap_or(false);
            kinds.insert(id, if is_special { 3 } else { 4 });
            if is_special {
                special.insert(content.to_string(), id);
            }
        }
    }
    let phantom = |t: &str| {
        if t.starts_with('[') && t.ends_with(']') {
            t.to_string()
        } else if let Some(rest) = t.strip_prefix("##") {
            rest.to_string()
        } else {
            format!("\u{2581}{t}")
        }
    };
    let list: Vec<String> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| match t {
            Some(t) => phantom(t),
            None => format!("[PAD{i}]"),
        })
        .collect();
    let types: Vec<i32> = (0..list.len())
        .map(|i| kinds.get(&i).copied().unwrap_or(1))
        .collect();
    g.string("tokenizer.ggml.model", "bert");
    g.strings("tokenizer.ggml.tokens", &list);
    g.i32s("tokenizer.ggml.token_type", &types);
    for (key, content) in [
        ("tokenizer.ggml.bos_token_id", "[CLS]"),
        ("tokenizer.ggml.cls_token_id", "[CLS]"),
        ("tokenizer.ggml.seperator_token_id", "[SEP]"),
        ("tokenizer.ggml.unknown_token_id", "[UNK]"),
        ("tokenizer.ggml.padding_token_id", "[PAD]"),
        ("tokenizer.ggml.mask_token_id", "[MASK]"),
    ] {
        if let Some(id) = special.get(content) {
            g.u32(key, *id as u32);
        }
    }
    let norm = &tokenizer["normalizer"];
    let lowercase = norm["lowercase"].as_bool().unwrap_or(true);
    g.bool("tokenizer.ggml.normalizer.lowercase", lowercase);
    g.bool(
        "tokenizer.ggml.normalizer.strip_accents",
        norm["strip_accents"].as_bool().unwrap_or(lowercase),
    );
    Ok(())
}

/// llama.cpp's name for a BERT weight (none for what it does not use).
fn tensor_name(hf: &str) -> Option<String> {
    let n = hf.strip_prefix("bert.").unwrap_or(hf);
    let fixed = match n {
        "embeddings.word_embeddings.weight" => Some("token_embd.weight"),
        "embeddings.position_embeddings.weight" => Some("position_embd.weight"),
        "embeddings.token_type_embeddings.weight" => Some("token_types.weight"),
        "embeddings.LayerNorm.weight" | "embeddings.LayerNorm.gamma" => {
            Some("token_embd_norm.weight")
        }
        "embeddings.LayerNorm.bias" | "embeddings.LayerNorm.beta" => Some("token_embd_norm.bias"),
        _ => None,
    };
    if let Some(f) = fixed {
        return Some(f.to_string());
    }
    let rest = n.strip_prefix("encoder.layer.")?;
    let (layer, part) = rest.split_once('.')?;
    let layer: u32 = layer.parse().ok()?;
    let (module, kind) = part.rsplit_once('.')?;
    let kind = match kind {
        "weight" | "gamma" => "weight",
        "bias" | "beta" => "bias",
        _ => return None,
    };
    let ours = match module {
        "attention.self.query" => "attn_q",
        "attention.self.key" => "attn_k",
        "attention.self.value" => "attn_v",
        "attention.output.dense" => "attn_output",
        "attention.output.LayerNorm" => "attn_output_norm",
        "intermediate.dense" => "ffn_up",
        "output.dense" => "ffn_down",
        "output.LayerNorm" => "layer_output_norm",
        _ => return None,
    };
    Some(format!("blk.{layer}.{ours}.{kind}"))
}

/// The weights of a safetensors file, each under llama.cpp's name, as they are stored.
fn tensors<'a>(g: &mut Gguf<'a>, file: &'a [u8], path: &Path) -> Result<(), String> {
    let bad = |m: String| format!("{}: {m}", path.display());
    if file.len() < 8 {
        return Err(bad("too short to be a safetensors file".into()));
    }
    let n = u64::from_le_bytes(file[..8].try_into().expect("8 bytes")) as usize;
    let header = file
        .get(8..8usize.saturating_add(n))
        .ok_or_else(|| bad(format!("header of {n} bytes runs past the file's end")))?;
    let header: BTreeMap<String, Value> =
        serde_json::from_slice(header).map_err(|e| bad(format!("header: {e}")))?;
    let data = &file[8 + n..];
    let mut found = 0;
    for (name, t) in &header {
        let Some(ours) = tensor_name(name) else {
            continue;
        };
        let ty = match t["dtype"].as_str() {
            Some("F32") => GgmlType::F32,
            Some("F16") => GgmlType::F16,
            Some("BF16") => GgmlType::Bf16,
            other => {
                return Err(bad(format!(
                    "tensor {name}: type {other:?}, not F32, F16 or BF16"
                )));
            }
        };
        let shape: Vec<u64> = t["shape"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        let offsets: Vec<usize> = t["data_offsets"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_u64().map(|x| x as usize))
                    .collect()
            })
            .unwrap_or_default();
        let (Some(&from), Some(&to)) = (offsets.first(), offsets.get(1)) else {
            return Err(bad(format!("tensor {name}: no data_offsets")));
        };
        let bytes = data
            .get(from..to)
            .ok_or_else(|| bad(format!("tensor {name}: its data runs past the file's end")))?;
        let count: u64 = shape.iter().product();
        if shape.is_empty() || count * ty.size() != bytes.len() as u64 {
            return Err(bad(format!(
                "tensor {name}: shape {shape:?} does not match its {} bytes",
                bytes.len()
            )));
        }
        // ggml lists dimensions fastest first: the reverse of the row-major shape.
        let dims: Vec<u64> = shape.iter().rev().copied().collect();
        g.tensor(&ours, &dims, ty, bytes);
        found += 1;
    }
    if found == 0 {
        return Err(bad("no BERT weights found".into()));
    }
    Ok(())
}

/// A tensor's element type in GGUF.
#[derive(Clone, Copy)]
enum GgmlType {
    F32,
    F16,
    Bf16,
}

impl GgmlType {
    fn id(self) -> u32 {
        match self {
            GgmlType::F32 => 0,
            GgmlType::F16 => 1,
            GgmlType::Bf16 => 30,
        }
    }
    fn size(self) -> u64 {
        match self {
            GgmlType::F32 => 4,
            GgmlType::F16 | GgmlType::Bf16 => 2,
        }
    }
}

/// A GGUF file (version 3) being written: metadata, then tensor descriptions, then the data,
/// each tensor aligned to 32 bytes.
/// The tensors' data is borrowed from the file it was read from, and copied once, into the output.
#[derive(Default)]
struct Gguf<'a> {
    kv: Vec<u8>,
    n_kv: u64,
    tensors: Vec<(String, Vec<u64>, GgmlType, &'a [u8])>,
}

const ALIGN: usize = 32;

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

impl<'a> Gguf<'a> {
    fn key(&mut self, k: &str, ty: u32) {
        put_str(&mut self.kv, k);
        self.kv.extend(ty.to_le_bytes());
        self.n_kv += 1;
    }
    fn u32(&mut self, k: &str, v: u32) {
        self.key(k, 4);
        self.kv.extend(v.to_le_bytes());
    }
    fn f32(&mut self, k: &str, v: f32) {
        self.key(k, 6);
        self.kv.extend(v.to_le_bytes());
    }
    fn bool(&mut self, k: &str, v: bool) {
        self.key(k, 7);
        self.kv.push(v as u8);
    }
    fn string(&mut self, k: &str, v: &str) {
        self.key(k, 8);
        put_str(&mut self.kv, v);
    }
    fn strings(&mut self, k: &str, v: &[String]) {
        self.key(k, 9);
        self.kv.extend(8u32.to_le_bytes());
        self.kv.extend((v.len() as u64).to_le_bytes());
        for s in v {
            put_str(&mut self.kv, s);
        }
    }
    fn i32s(&mut self, k: &str, v: &[i32]) {
        self.key(k, 9);
        self.kv.extend(5u32.to_le_bytes());
        self.kv.extend((v.len() as u64).to_le_bytes());
        for x in v {
            self.kv.extend(x.to_le_bytes());
        }
    }
    fn tensor(&mut self, name: &str, dims: &[u64], ty: GgmlType, data: &'a [u8]) {
        self.tensors
            .push((name.to_string(), dims.to_vec(), ty, data));
    }
    fn bytes(self) -> Vec<u8> {
        let pad = |out: &mut Vec<u8>| {
            while out.len() % ALIGN != 0 {
                out.push(0);
            }
        };
        let data: usize = self.tensors.iter().map(|t| t.3.len() + ALIGN).sum();
        let mut out = Vec::with_capacity(self.kv.len() + data + 4096);
        out.extend(b"GGUF");
        out.extend(3u32.to_le_bytes());
        out.extend((self.tensors.len() as u64).to_le_bytes());
        out.extend(self.n_kv.to_le_bytes());
        out.extend(&self.kv);
        let mut offset = 0u64;
        for (name, dims, ty, data) in &self.tensors {
            put_str(&mut out, name);
            out.extend((dims.len() as u32).to_le_bytes());
            for d in dims {
                out.extend(d.to_le_bytes());
            }
            out.extend(ty.id().to_le_bytes());
            out.extend(offset.to_le_bytes());
            offset += (data.len() as u64).div_ceil(ALIGN as u64) * ALIGN as u64;
        }
        pad(&mut out);
        for (_, _, _, data) in &self.tensors {
            out.extend_from_slice(data);
            pad(&mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bert_weights_get_llama_cpps_names_and_the_rest_none() {
        assert_eq!(
            tensor_name("encoder.layer.5.attention.self.query.weight").as_deref(),
            Some("blk.5.attn_q.weight")
        );
        assert_eq!(
            tensor_name("bert.encoder.layer.0.output.LayerNorm.gamma").as_deref(),
            Some("blk.0.layer_output_norm.weight")
        );
        assert_eq!(
            tensor_name("encoder.layer.2.intermediate.dense.bias").as_deref(),
            Some("blk.2.ffn_up.bias")
        );
        assert_eq!(
            tensor_name("embeddings.word_embeddings.weight").as_deref(),
            Some("token_embd.weight")
        );
        for skipped in [
            "pooler.dense.weight",
            "embeddings.position_ids",
            "cls.predictions.bias",
        ] {
            assert_eq!(tensor_name(skipped), None, "{skipped}");
        }
    }

    #[test]
    fn a_gguf_file_has_its_header_and_aligned_data() {
        let mut g = Gguf::default();
        g.u32("a", 7);
        g.tensor("t", &[3], GgmlType::F32, &[0u8; 12]);
        g.tensor("u", &[2], GgmlType::F16, &[1u8; 4]);
        let b = g.bytes();
        assert_eq!(&b[..4], b"GGUF");
        assert_eq!(u32::from_le_bytes(b[4..8].try_into().unwrap()), 3);
        assert_eq!(u64::from_le_bytes(b[8..16].try_into().unwrap()), 2);
        assert_eq!(u64::from_le_bytes(b[16..24].try_into().unwrap()), 1);
        // The second tensor's data starts 32 bytes after the first's, and the file ends aligned.
        assert_eq!(b.len() % ALIGN, 0);
        let data_start = b.len() - 2 * ALIGN;
        assert_eq!(&b[data_start..data_start + 12], &[0u8; 12]);
        assert_eq!(&b[data_start + ALIGN..data_start + ALIGN + 4], &[1u8; 4]);
    }

    #[test]
    fn a_folder_with_a_broken_weight_file_names_the_file() {
        let dir = std::env::temp_dir().join(format!("simulacra-bert-gguf-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        std::fs::write(
            dir.join("config.json"),
            r#"{"max_position_embeddings": 512, "hidden_size": 4, "intermediate_size": 8,
                "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": 2}"#,
        )
        .unwrap();
        std::fs::write(
            dir.join("tokenizer.json"),
            r#"{"model": {"type": "WordPiece", "vocab": {"[PAD]": 0, "a": 1}}}"#,
        )
        .unwrap();
        std::fs::write(
            dir.join("model.safetensors"),
            b"\xff\xff\xff\xff\xff\xff\xff\x00",
        )
        .unwrap();
        let e = convert(&dir).unwrap_err();
        assert!(
            e.contains("model.safetensors") && e.contains("header"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
