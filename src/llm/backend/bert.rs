//! A sentence embedder in-process: a BERT model in the sentence-transformers layout (the
//! default is all-MiniLM-L6-v2, 384 dimensions, mean pooling, unit length), run with the BERT
//! encoder in `bert_model.rs` (on candle) and the `tokenizers` crate on its own thread. Requests that
//! arrive together are embedded in one batch. It only makes embeddings: chat requests routed
//! here fail at once (the config check forbids routing them here).

use super::bert_model::{BertModel, Config};
use super::{Backend, BackendError, ErrorKind, Health, Work, WorkDone, WorkKind, WorkOutcome};
use crate::llm::config::BertConfig;
pub use crate::llm::model_files::{MODEL_FILES, check_model_dir, resolve_dir};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use crossbeam_channel::{Receiver, Sender, unbounded};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokenizers::{Tokenizer, TruncationParams};

/// A loaded embedder: tokenizer, model and pooling.
pub struct SentenceEmbedder {
    tokenizer: Tokenizer,
    model: BertModel,
    mean_pooling: bool,
    /// Model identity, stored with each vector.
    pub model_id: String,
    /// Vector size.
    pub dim: usize,
}

impl SentenceEmbedder {
    /// Loads a model folder (`config.json`, `tokenizer.json`, `model.safetensors`, and
    /// optionally `1_Pooling/config.json`).
    pub fn load(dir: &Path, max_tokens: usize) -> Result<Self, String> {
        check_model_dir(dir)?;
        let read = |f: &str| {
            std::fs::read_to_string(dir.join(f))
                .map_err(|e| format!("cannot read {}: {e}", dir.join(f).display()))
        };
        let config: Config = serde_json::from_str(&read("config.json")?)
            .map_err(|e| format!("{}: {e}", dir.join("config.json").display()))?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| format!("{}: {e}", dir.join("tokenizer.json").display()))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens.clamp(8, 512),
                ..Default::default()
            }))
            .map_err(|e| format!("tokenizer truncation: {e}"))?;
        let weights = candle_core::safetensors::load(dir.join("model.safetensors"), &Device::Cpu)
            .map_err(|e| format!("{}: {e}", dir.join("model.safetensors").display()))?;
        let vb = VarBuilder::from_tensors(weights, DType::F32, &Device::Cpu);
        let model = BertModel::load(vb, &config)
            .map_err(|e| format!("cannot build the BERT model from {}: {e}", dir.display()))?;
        // sentence-transformers' pooling settings; mean pooling when absent.
        let mean_pooling = std::fs::read_to_string(dir.join("1_Pooling/config.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .map(|v| v.get("pooling_mode_cls_token").and_then(|x| x.as_bool()) != Some(true))
            .unwrap_or(true);
        let name = dir
            .file_name()
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_else(|| "bert".into());
        Ok(Self {
            tokenizer,
            model,
            mean_pooling,
            model_id: format!("bert:{name}"),
            dim: config.hidden_size,
        })
    }

    /// Unit vectors and token counts for a batch of texts.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<(Vec<f32>, u32)>, String> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings: Vec<tokenizers::Encoding> = texts
            .iter()
            .map(|t| self.tokenizer.encode(*t, true))
            .collect::<Result<_, _>>()
            .map_err(|e| format!("tokenizer: {e}"))?;
        let len = encodings
            .iter()
            .map(|e| e.get_ids().len())
            .max()
            .unwrap_or(1)
            .max(1);
        let mut ids = Vec::with_capacity(texts.len() * len);
        let mut mask = Vec::with_capacity(texts.len() * len);
        for e in &encodings {
            let n = e.get_ids().len();
            ids.extend_from_slice(e.get_ids());
            ids.extend(std::iter::repeat_n(0u32, len - n));
            mask.extend(std::iter::repeat_n(1u32, n));
            mask.extend(std::iter::repeat_n(0u32, len - n));
        }
        let err = |e: candle_core::Error| format!("embedding: {e}");
        let dev = &Device::Cpu;
        let ids = Tensor::from_vec(ids, (texts.len(), len), dev).map_err(err)?;
        let mask = Tensor::from_vec(mask, (texts.len(), len), dev).map_err(err)?;
        let types = ids.zeros_like().map_err(err)?;
        let hidden = self.model.forward(&ids, &types, Some(&mask)).map_err(err)?;
        let pooled = if self.mean_pooling {
            let m = mask
                .to_dtype(DType::F32)
                .map_err(err)?
                .unsqueeze(2)
                .map_err(err)?;
            let sum = hidden.broadcast_mul(&m).map_err(err)?.sum(1).map_err(err)?;
            let count = m
                .sum(1)
                .map_err(err)?
                .clamp(1e-9f32, f32::MAX)
                .map_err(err)?;
            sum.broadcast_div(&count).map_err(err)?
        } else {
            hidden
                .narrow(1, 0, 1)
                .map_err(err)?
                .squeeze(1)
                .map_err(err)?
        };
        let rows: Vec<Vec<f32>> = pooled.to_vec2().map_err(err)?;
        Ok(rows
            .into_iter()
            .zip(&encodings)
            .map(|(v, e)| {
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
                (
                    v.into_iter().map(|x| x / n).collect(),
                    e.get_ids().len() as u32,
                )
            })
            .collect())
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
    let threads = cfg
        .threads
        .map(|t| t.max(1) as usize)
        .unwrap_or_else(|| super::llama::default_threads() as usize);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("embedder-{i}"))
        .build();
    let loaded = SentenceEmbedder::load(&dir, cfg.max_tokens);
    let (embedder, pool) = match (loaded, pool) {
        (Ok(e), Ok(p)) => (e, p),
        (Err(e), _) => {
            *health.lock().unwrap() = (Health::Down, format!("fatal: {e}"));
            while let Ok((w, d)) = rx.recv() {
                fail(index, &w, &d, ErrorKind::Fatal, e.clone());
            }
            return;
        }
        (_, Err(e)) => {
            *health.lock().unwrap() = (Health::Down, format!("fatal: thread pool: {e}"));
            return;
        }
    };
    *health.lock().unwrap() = (
        Health::Ok,
        format!(
            "{} ({}d) on {threads} thread(s)",
            embedder.model_id, embedder.dim
        ),
    );
    let batch = cfg.batch.max(1);
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
        let mut texts: Vec<(Work, Sender<WorkDone>, String)> = Vec::new();
        for (w, d) in jobs {
            if w.cancelled.load(std::sync::atomic::Ordering::Relaxed) {
                continue;
            }
            match &w.kind {
                WorkKind::Embed { text } => {
                    let t = text.clone();
                    texts.push((w, d, t));
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
        // Similar lengths together: less padding.
        texts.sort_by_key(|(_, _, t)| t.len());
        let refs: Vec<&str> = texts.iter().map(|(_, _, t)| t.as_str()).collect();
        let result = pool.install(|| embedder.embed(&refs));
        match result {
            Ok(vectors) => {
                for ((w, d, _), (vector, n)) in texts.iter().zip(vectors) {
                    let _ = d.send(WorkDone {
                        id: w.id,
                        backend: index,
                        endpoint: None,
                        outcome: WorkOutcome::Vector {
                            vector,
                            model: embedder.model_id.clone(),
                            prompt_tokens: n,
                        },
                    });
                }
            }
            Err(e) => {
                for (w, d, _) in &texts {
                    fail(index, w, d, ErrorKind::Malformed, e.clone());
                }
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
