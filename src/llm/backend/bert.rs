//! A sentence embedder in-process: a BERT model in the sentence-transformers layout (the
//! default is all-MiniLM-L6-v2, 384 dimensions, mean pooling, unit length), run by llama.cpp from
//! the GGUF file `bert_gguf.rs` writes beside the folder's files, on its own thread. Requests that
//! arrive together are taken together, each embedded in a decode of its own (so that its vector
//! does not depend on what came with it). It only makes embeddings: chat requests routed here
//! fail at once (the config check forbids routing them here).

use super::llama::Embedder;
use super::{Backend, BackendError, ErrorKind, Health, Work, WorkDone, WorkKind, WorkOutcome};
use crate::llm::config::BertConfig;
pub use crate::llm::model_files::{MODEL_FILES, check_model_dir, resolve_dir};
use crossbeam_channel::{Receiver, Sender, unbounded};
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::token::LlamaToken;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Tokens one decode of the encoder reads (its attention is over all of them at once, so a
/// small pass: memories are a few dozen tokens each).
const ROOM: usize = 512;

/// The sentence embedder's model, loaded from its folder.
pub struct SentenceModel {
    model: LlamaModel,
    /// Model identity, stored with each vector.
    pub model_id: String,
}

impl SentenceModel {
    /// Loads a model folder (`config.json`, `tokenizer.json`, `model.safetensors`), writing its
    /// llama.cpp file first when there is none.
    pub fn load(dir: &Path) -> Result<Self, String> {
        check_model_dir(dir)?;
        let pooling = std::fs::read_to_string(dir.join("1_Pooling/config.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
        if pooling.as_ref().is_some_and(|v| {
            v.get("pooling_mode_mean_tokens").and_then(|x| x.as_bool()) == Some(false)
        }) {
            return Err(format!(
                "{}: only mean pooling is supported (pooling_mode_mean_tokens is false)",
                dir.join("1_Pooling/config.json").display()
            ));
        }
        let gguf = super::bert_gguf::gguf_for(dir)?;
        let backend = super::llama::global_backend()?;
        let model = LlamaModel::load_from_file(
            backend,
            &gguf,
            // The embedder stays on the CPU, whatever GPU the chat model is given.
            &LlamaModelParams::default()
                .with_n_gpu_layers(0)
                .with_devices(&[])
                .map_err(|e| e.to_string())?,
        )
        .map_err(|e| format!("cannot load {}: {e}", gguf.display()))?;
        let name = dir
            .file_name()
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_else(|| "bert".into());
        Ok(Self {
            model,
            model_id: format!("bert:{name}"),
        })
    }

    /// Vector size.
    pub fn dim(&self) -> usize {
        self.model.n_embd() as usize
    }

    /// A text's tokens ([CLS] … [SEP]), cut to `max` keeping the closing [SEP].
    pub fn tokens(&self, text: &str, max: usize) -> Vec<LlamaToken> {
        let mut t = self.model.vocab().tokenize(text.as_bytes(), true, false);
        let max = max.max(2);
        if t.len() > max {
            let last = *t.last().expect("longer than max");
            t.truncate(max - 1);
            t.push(last);
        }
        if t.is_empty() {
            t.push(self.model.vocab().bos());
        }
        t
    }

    /// An embedding context on this model.
    pub fn embedder(&self, threads: i32, seqs: usize) -> Result<Embedder<'_>, String> {
        let backend = super::llama::global_backend()?;
        Embedder::sized(&self.model, backend, threads, false, seqs, ROOM)
    }
}

/// The game-side handle of the embedder thread.
pub struct BertBackendHandle {
    index: usize,
    name: String,
    model_id: String,
    tx: Option<Sender<(Work, Sender<WorkDone>)>>,
    health: Arc<Mutex<(Health, String)>>,
}

impl BertBackendHandle {
    /// Checks the folder and starts the thread (loading happens there).
    pub fn start(index: usize, cfg: BertConfig) -> Self {
        let dir = resolve_dir(&cfg.model);
        let model_id = format!(
            "bert:{}",
            dir.file_name()
                .map(|f| f.to_string_lossy().to_string())
                .unwrap_or_default()
        );
        let health = Arc::new(Mutex::new((
            Health::Starting,
            format!("loading {}", dir.display()),
        )));
        let mut me = Self {
            index,
            name: cfg.name.clone(),
            model_id,
            tx: None,
            health: health.clone(),
        };
        if let Err(e) = check_model_dir(&dir) {
            *health.lock().unwrap() = (Health::Down, e);
            return me;
        }
        let (tx, rx) = unbounded();
        let h = health.clone();
        let spawned = std::thread::Builder::new()
            .name("llm-embedder".into())
            .spawn(move || worker(index, cfg, dir, rx, h));
        match spawned {
            Ok(_) => me.tx = Some(tx),
            Err(e) => {
                *health.lock().unwrap() = (
                    Health::Down,
                    format!("fatal: cannot start the embedder thread: {e}"),
                )
            }
        }
        me
    }
}

fn fail(index: usize, w: &Work, done: &Sender<WorkDone>, kind: ErrorKind, msg: String) {
    let _ = done.send(WorkDone {
        id: w.id,
        backend: index,
        endpoint: None,
        outcome: WorkOutcome::Failed(BackendError::new(kind, msg)),
    });
}

fn worker(
    index: usize,
    cfg: BertConfig,
    dir: PathBuf,
    rx: Receiver<(Work, Sender<WorkDone>)>,
    health: Arc<Mutex<(Health, String)>>,
) {
    // Each text is a decode of its own, a few dozen tokens: a second thread would mostly wait
    // at the barriers between its operations, and spin there, beside the chat model's threads.
    let threads = cfg.threads.map_or(1, |t| t.max(1) as i32);
    let loaded = SentenceModel::load(&dir);
    let batch = cfg.batch.max(1);
    let ready = match &loaded {
        Ok(m) => m.embedder(threads, batch).map(|e| (m, e)),
        Err(e) => Err(e.clone()),
    };
    let (model, mut embedder) = match ready {
        Ok(x) => x,
        Err(e) => {
            let e = format!("fatal: {e}");
            *health.lock().unwrap() = (Health::Down, e.clone());
            while let Ok((w, d)) = rx.recv() {
                fail(index, &w, &d, ErrorKind::Fatal, e.clone());
            }
            return;
        }
    };
    let max_tokens = cfg.max_tokens.clamp(8, 512).min(embedder.room());
    *health.lock().unwrap() = (
        Health::Ok,
        format!(
            "{} ({}d, llama.cpp) on {threads} thread(s)",
            model.model_id,
            model.dim()
        ),
    );
    while let Ok(first) = rx.recv() {
        // Requests come in bursts (many memories at once): take what arrives within a moment.
        let mut jobs = vec![first];
        let until = Instant::now() + Duration::from_millis(3);
        while jobs.len() < batch {
            match rx.recv_deadline(until) {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        let mut texts: Vec<(Work, Sender<WorkDone>)> = Vec::new();
        let mut tokens: Vec<Vec<LlamaToken>> = Vec::new();
        for (w, d) in jobs {
            if w.cancelled.load(std::sync::atomic::Ordering::Relaxed) {
                continue;
            }
            match &w.kind {
                WorkKind::Embed { text } => {
                    tokens.push(model.tokens(text, max_tokens));
                    texts.push((w, d));
                }
                WorkKind::Chat { .. } => fail(
                    index,
                    &w,
                    &d,
                    ErrorKind::Fatal,
                    format!(
                        "{} only makes embeddings; route chat purposes to another backend",
                        cfg.name
                    ),
                ),
            }
        }
        let vectors = embedder.embed_tokens(&tokens);
        for ((w, d), result) in texts.iter().zip(vectors) {
            match result {
                Ok((vector, n)) => {
                    let _ = d.send(WorkDone {
                        id: w.id,
                        backend: index,
                        endpoint: None,
                        outcome: WorkOutcome::Vector {
                            vector,
                            model: model.model_id.clone(),
                            prompt_tokens: n,
                        },
                    });
                }
                Err(e) => fail(index, w, d, ErrorKind::Malformed, e),
            }
        }
    }
}

impl Backend for BertBackendHandle {
    fn name(&self) -> &str {
        &self.name
    }
    fn model_id(&self) -> String {
        self.model_id.clone()
    }
    fn capacity(&self) -> usize {
        64
    }
    fn start(&mut self, work: Work, done: Sender<WorkDone>) {
        match &self.tx {
            Some(tx) => {
                let _ = tx.send((work, done));
            }
            None => {
                let msg = self.health.lock().unwrap().1.clone();
                fail(self.index, &work, &done, ErrorKind::Fatal, msg);
            }
        }
    }
    fn health(&self) -> (Health, String) {
        self.health.lock().unwrap().clone()
    }
    fn available(&self) -> bool {
        self.tx.is_some() && self.health.lock().unwrap().0 != Health::Down
    }
}
