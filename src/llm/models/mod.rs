//! The GGUF chat models already on the machine (`simulacra models`): the project's `models/`
//! folder, Ollama's store (a manifest per tag naming its model blob), LM Studio's
//! (`publisher/repository/file.gguf`) and Hugging Face's cache (snapshots whose files link to
//! blobs). Each file's header is read by llama.cpp's parser ([`gguf`]); a store that is missing
//! is passed over, and one that cannot be read, or a file that is not a chat model, is skipped
//! with a line saying why.

pub mod gguf;

use gguf::ModelInfo;
use std::path::{Path, PathBuf};

/// Where a model was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Store {
    /// The project's `models/` folder.
    Project,
    /// Ollama (`~/.ollama/models`, or `$OLLAMA_MODELS`).
    Ollama,
    /// LM Studio (`~/.lmstudio/models`, `~/.cache/lm-studio/models`).
    LmStudio,
    /// Hugging Face's cache (`~/.cache/huggingface/hub`, or `$HF_HUB_CACHE`, `$HF_HOME/hub`).
    HuggingFace,
}

impl Store {
    /// Its name in a listing.
    pub fn label(self) -> &'static str {
        match self {
            Store::Project => "models/",
            Store::Ollama => "ollama",
            Store::LmStudio => "lm-studio",
            Store::HuggingFace => "hugging-face",
        }
    }
}

/// A chat model found.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The name it is asked for by (an Ollama tag such as `llama3.2:3b`; `publisher/repo/file`
    /// for LM Studio and Hugging Face; the file's name in `models/`).
    pub name: String,
    /// Where.
    pub store: Store,
    /// The GGUF file (an Ollama blob, a Hugging Face snapshot's link).
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// What its header says.
    pub info: ModelInfo,
}

/// A file or store passed over, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    /// The file or folder.
    pub path: PathBuf,
    /// Why.
    pub why: String,
}

/// What the stores hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing {
    /// Chat models, by store, then name.
    pub found: Vec<Found>,
    /// What was passed over.
    pub skipped: Vec<Skipped>,
}

/// The folders looked in.
#[derive(Debug, Clone, PartialEq)]
pub struct Roots {
    /// The project's models folder.
    pub project: PathBuf,
    /// Ollama's models folder.
    pub ollama: PathBuf,
    /// LM Studio's models folders.
    pub lm_studio: Vec<PathBuf>,
    /// Hugging Face's hub cache.
    pub hugging_face: PathBuf,
}

impl Roots {
    /// The stores' usual places under `home`, and `project` for the game's own.
    pub fn under_home(home: &Path, project: PathBuf) -> Self {
        Self {
            project,
            ollama: home.join(".ollama/models"),
            lm_studio: vec![
                home.join(".lmstudio/models"),
                home.join(".cache/lm-studio/models"),
            ],
            hugging_face: home.join(".cache/huggingface/hub"),
        }
    }

    /// The stores of this machine's user: under `$HOME`, with Ollama's `$OLLAMA_MODELS` and
    /// Hugging Face's `$HF_HUB_CACHE` (or `$HF_HOME/hub`) where set; the project's
    /// `models/` in the data folder.
    pub fn of_this_user() -> Self {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let home = var("HOME").unwrap_or_default();
        let mut r = Self::under_home(&home, crate::data::data_root().join("models"));
        if let Some(p) = var("OLLAMA_MODELS") {
            r.ollama = p;
        }
        if let Some(p) = var("HF_HUB_CACHE").or_else(|| var("HF_HOME").map(|h| h.join("hub"))) {
            r.hugging_face = p;
        }
        r
    }
}

/// The chat models in `roots`, and what was passed over.
pub fn list(roots: &Roots) -> Listing {
    let mut out = Listing::default();
    for (name, store, path) in candidates(roots, &mut out.skipped) {
        examine(name, store, path, &mut out);
    }
    out.found
        .sort_by(|a, b| (a.store, &a.name).cmp(&(b.store, &b.name)));
    out
}

/// The GGUF files of the stores with their names, store by store, before any header is read.
fn candidates(roots: &Roots, skipped: &mut Vec<Skipped>) -> Vec<(String, Store, PathBuf)> {
    let mut out: Vec<(String, Store, PathBuf)> = Vec::new();
    for file in gguf_files(&roots.project, skipped, 1) {
        out.push((file_name(&file), Store::Project, file));
    }
    ollama(&roots.ollama, &mut out, skipped);
    for root in &roots.lm_studio {
        for file in gguf_files(root, skipped, 3) {
            out.push((relative_name(root, &file), Store::LmStudio, file));
        }
    }
    hugging_face(&roots.hugging_face, &mut out, skipped);
    out
}

/// Reads a candidate's size and header: a chat model is found, anything else skipped with why.
fn examine(name: String, store: Store, path: PathBuf, out: &mut Listing) {
    let bytes = match std::fs::metadata(&path) {
        Ok(m) => m.len(),
        Err(e) => {
            out.skipped.push(Skipped {
                path,
                why: format!("cannot be read: {e}"),
            });
            return;
        }
    };
    match gguf::read(&path) {
        Ok(info) => match info.not_chat() {
            Some(why) => out.skipped.push(Skipped { path, why }),
            None => out.found.push(Found {
                name,
                store,
                path,
                bytes,
                info,
            }),
        },
        Err(why) => out.skipped.push(Skipped { path, why }),
    }
}

/// A file's name as text.
fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `file` relative to `root`, with `/` between its parts.
fn relative_name(root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(root).unwrap_or(file);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The entries of a folder, sorted by name; a folder that cannot be read is noted (a missing
/// one is not: that store is not installed).
fn entries(dir: &Path, skipped: &mut Vec<Skipped>) -> Vec<PathBuf> {
    match std::fs::read_dir(dir) {
        Ok(rd) => {
            let mut v: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
            v.sort();
            v
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            skipped.push(Skipped {
                path: dir.to_path_buf(),
                why: format!("cannot be read: {e}"),
            });
            Vec::new()
        }
    }
}

/// The `.gguf` files in `dir` and its folders down to `depth` levels (1: `dir` alone).
fn gguf_files(dir: &Path, skipped: &mut Vec<Skipped>, depth: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in entries(dir, skipped) {
        if p.is_dir() {
            if depth > 1 {
                out.extend(gguf_files(&p, skipped, depth - 1));
            }
        } else if p
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
        {
            out.push(p);
        }
    }
    out
}

/// Ollama's media type of a model's weights in a manifest.
const OLLAMA_MODEL: &str = "application/vnd.ollama.image.model";

/// Ollama's tags: `manifests/<host>/<namespace>/<model>/<tag>`, each a JSON manifest whose
/// model layer names its blob (`blobs/sha256-<hex>`). Named as Ollama names them: `model:tag`
/// from its own library, `namespace/model:tag` from another namespace of its registry,
/// `host/namespace/model:tag` from another registry.
fn ollama(root: &Path, out: &mut Vec<(String, Store, PathBuf)>, skipped: &mut Vec<Skipped>) {
    let manifests = root.join("manifests");
    for host in entries(&manifests, skipped) {
        for ns in entries(&host, skipped) {
            for model in entries(&ns, skipped) {
                for tag in entries(&model, skipped) {
                    if !tag.is_file() {
                        continue;
                    }
                    let [h, n, m, t] = [&host, &ns, &model, &tag].map(|p| file_name(p));
                    let name = match (h.as_str(), n.as_str()) {
                        ("registry.ollama.ai", "library") => format!("{m}:{t}"),
                        ("registry.ollama.ai", _) => format!("{n}/{m}:{t}"),
                        _ => format!("{h}/{n}/{m}:{t}"),
                    };
                    match ollama_blob(root, &tag) {
                        Ok(blob) => out.push((name, Store::Ollama, blob)),
                        Err(why) => skipped.push(Skipped { path: tag, why }),
                    }
                }
            }
        }
    }
}

/// The blob a manifest names as its model's weights.
fn ollama_blob(root: &Path, manifest: &Path) -> Result<PathBuf, String> {
    let text = std::fs::read_to_string(manifest).map_err(|e| format!("cannot be read: {e}"))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("not an Ollama manifest: {e}"))?;
    let digest = v
        .get("layers")
        .and_then(|l| l.as_array())
        .and_then(|l| {
            l.iter()
                .find(|x| x.get("mediaType").and_then(|m| m.as_str()) == Some(OLLAMA_MODEL))
        })
        .and_then(|x| x.get("digest"))
        .and_then(|d| d.as_str())
        .ok_or("its manifest names no model layer (a projector or an adapter only?)")?;
    // Only a digest's own characters: a manifest never names a file outside the blobs.
    let hex = digest
        .strip_prefix("sha256:")
        .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
        .ok_or_else(|| format!("its model layer's digest {digest:?} is not sha256:<hex>"))?;
    let blob = root.join("blobs").join(format!("sha256-{hex}"));
    if !blob.is_file() {
        return Err(format!(
            "its model blob {} is missing (pulled only partly?)",
            blob.display()
        ));
    }
    Ok(blob)
}

/// Hugging Face's cache: `models--<org>--<repo>/snapshots/<revision>/…/<file>.gguf`, each a link
/// to a blob, named `org/repo/file` (the newest snapshot's, where a file is in several).
fn hugging_face(root: &Path, out: &mut Vec<(String, Store, PathBuf)>, skipped: &mut Vec<Skipped>) {
    for repo in entries(root, skipped) {
        let folder = file_name(&repo);
        let Some(id) = folder.strip_prefix("models--") else {
            continue;
        };
        let id = id.replacen("--", "/", 1);
        let mut seen: Vec<(std::time::SystemTime, String, PathBuf)> = Vec::new();
        for snapshot in entries(&repo.join("snapshots"), skipped) {
            let when = std::fs::metadata(&snapshot)
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            for file in gguf_files(&snapshot, skipped, 3) {
                let name = format!("{id}/{}", relative_name(&snapshot, &file));
                match seen.iter_mut().find(|(_, n, _)| *n == name) {
                    Some(s) if s.0 < when => *s = (when, name, file),
                    Some(_) => {}
                    None => seen.push((when, name, file)),
                }
            }
        }
        out.extend(seen.into_iter().map(|(_, n, f)| (n, Store::HuggingFace, f)));
    }
}

/// A listing in words: a line a model (name, store, parameters, quantisation, size, context,
/// file), then a line for each thing skipped.
pub fn report(l: &Listing) -> String {
    let mut s = String::new();
    if l.found.is_empty() {
        s.push_str("no GGUF chat model found\n");
    } else {
        let w = l
            .found
            .iter()
            .map(|f| f.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        s.push_str(&format!(
            "{:w$}  {:12}  {:>7}  {:9}  {:>8}  {:>7}  file\n",
            "name", "store", "params", "quant", "size", "context"
        ));
        for f in &l.found {
            s.push_str(&format!(
                "{:w$}  {:12}  {:>7}  {:9}  {:>5.2} GB  {:>7}  {}\n",
                f.name,
                f.store.label(),
                f.info.parameters_words(),
                f.info.quantisation,
                f.bytes as f64 / 1e9,
                f.info.context_length.map_or("?".into(), |c| c.to_string()),
                f.path.display()
            ));
        }
    }
    for k in &l.skipped {
        s.push_str(&format!("skipped {}: {}\n", k.path.display(), k.why));
    }
    s
}

impl crate::llm::config::LlmConfig {
    /// The embedded llama.cpp backends run the chat model at `path` (`simulacra play --model`);
    /// a file in another program's store is read as it is (`weights: AsFile`: no copy is
    /// written beside it). Refused when the config has no embedded chat backend.
    pub fn use_model(&mut self, path: &Path, theirs: bool) -> Result<(), String> {
        let mut any = false;
        for b in &mut self.backends {
            if let crate::llm::config::BackendConfig::Llama(c) = b {
                c.model = path.to_string_lossy().into_owned();
                if theirs {
                    c.weights = crate::llm::config::Weights::AsFile;
                }
                any = true;
            }
        }
        if any {
            Ok(())
        } else {
            Err("--model: the config has no embedded llama.cpp backend (Llama) to run it on".into())
        }
    }
}

/// The GGUF file `name` stands for: a path to a file, else a name [`list`] finds in `roots`
/// (the first store in [`Store`]'s order that has it; an Ollama tag without `:` is its
/// `:latest`). Refused, saying why, when the file is not a chat model or no store has the name
/// (the names found are listed).
pub fn resolve(name: &str, roots: &Roots) -> Result<(PathBuf, Store, ModelInfo), String> {
    let path = Path::new(name);
    if path.is_file() {
        let info = gguf::read(path).map_err(|e| format!("--model {name}: {e}"))?;
        if let Some(why) = info.not_chat() {
            return Err(format!("--model {name}: {why}"));
        }
        return Ok((path.to_path_buf(), Store::Project, info));
    }
    // Only the headers of files by that name are read (in the stores' order, as the listing
    // has them), not every model's on the machine.
    let wanted = |n: &str, store: Store| {
        n == name || (store == Store::Ollama && n == format!("{name}:latest"))
    };
    let mut named = candidates(roots, &mut Vec::new());
    named.retain(|(n, store, _)| wanted(n, *store));
    named.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    for (n, store, path) in named {
        let mut one = Listing::default();
        examine(n, store, path, &mut one);
        if let Some(f) = one.found.pop() {
            return Ok((f.path, f.store, f.info));
        }
    }
    let listing = list(roots);
    let names: Vec<&str> = listing.found.iter().map(|f| f.name.as_str()).collect();
    Err(if names.is_empty() {
        format!(
            "--model {name}: no such file, and no GGUF chat model is in the stores (`simulacra models` says where it looked)"
        )
    } else {
        format!(
            "--model {name}: no such file, and no store has a model by that name; `simulacra models` lists {}: {}",
            names.len(),
            names.join(", ")
        )
    })
}
