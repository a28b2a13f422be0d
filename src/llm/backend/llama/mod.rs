//! llama.cpp in-process (crate `llama-cpp-2`), the default backend. One worker thread owns the
//! model and a context with one sequence per slot, and runs continuous batching: every
//! generating slot adds its next token and waiting prompts fill the rest of the batch, so all
//! pending requests share each decode. Each slot keeps the KV cache of its last prompt, and a
//! new request goes to the free slot sharing the longest prefix with it (or copies the prefix
//! from a busy one), so an agent's identity block is decoded once, not on every request.
//! Output shapes are enforced by a GBNF grammar in each slot's own sampler.
//!
//! This file holds the game-side handle and the model helpers; the worker thread's loop is in
//! `worker.rs`, the per-request sampler in `sampling.rs`, the embedding context in `embed.rs`.

mod embed;
pub mod gpu;
pub mod loops;
mod sampling;
pub mod threads;
pub mod weights;
pub(crate) mod worker;

pub use embed::Embedder;
pub use sampling::{ShapedSampler, build_sampler};
pub use worker::work::{ModelWork, model_work};

use super::{Backend, BackendError, ErrorKind, Health, Work, WorkDone, WorkOutcome};
use crate::llm::config::LlamaConfig;
pub use crate::llm::model_files::{check_model_file, resolve_model};
use crate::llm::types::ChatMessage;
use crossbeam_channel::{Sender, unbounded};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();

/// The process-wide llama.cpp backend (it may be initialised only once per process).
pub fn global_backend() -> Result<&'static LlamaBackend, String> {
    BACKEND
        .get_or_init(|| {
            LlamaBackend::init()
                .map(|mut b| {
                    b.void_logs();
                    b
                })
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
}

enum Cmd {
    Work(Work, Sender<WorkDone>),
}

/// The game-side handle of the llama worker thread.
pub struct LlamaBackendHandle {
    index: usize,
    name: String,
    model_id: String,
    capacity: usize,
    tx: Option<Sender<Cmd>>,
    health: Arc<Mutex<(Health, String)>>,
    /// Where the model runs, once loaded ([`gpu::Placement::short`]).
    place: Arc<Mutex<Option<String>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for LlamaBackendHandle {
    /// Closes the channel and waits for the worker to stop (it stops at its next decode round),
    /// so that the model is freed before the process tears down llama.cpp's globals: a worker
    /// still decoding at exit would crash the process.
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl LlamaBackendHandle {
    /// Checks the model file and starts the worker thread (loading happens there, so the game
    /// starts at once and shows "starting" meanwhile).
    pub fn start(index: usize, cfg: LlamaConfig) -> Self {
        let path = resolve_model(&cfg.model);
        // The id names the file that is read (answers of a Q8_0 copy are not the file's own).
        let (read, _) = weights::planned(&path, cfg.weights);
        let model_id = format!(
            "llama:{}",
            read.file_name()
                .map(|f| f.to_string_lossy().to_string())
                .unwrap_or_default()
        );
        let health = Arc::new(Mutex::new((
            Health::Starting,
            format!("loading {}", path.display()),
        )));
        let mut me = Self {
            index,
            name: cfg.name.clone(),
            model_id,
            capacity: cfg.slots.max(1) as usize,
            tx: None,
            health: health.clone(),
            place: Arc::new(Mutex::new(None)),
            thread: None,
        };
        if let Err(e) = check_model_file(&path) {
            *health.lock().unwrap() = (Health::Down, e);
            return me;
        }
        if let Some(emb) = &cfg.embedding_model
            && let Err(e) = check_model_file(&resolve_model(emb))
        {
            *health.lock().unwrap() = (Health::Down, e);
            return me;
        }
        let (tx, rx) = unbounded();
        let h = health.clone();
        let place = me.place.clone();
        let spawned = std::thread::Builder::new()
            .name("llm-llama".into())
            .spawn(move || {
                if let Err(e) = worker::run(index, cfg, path, &rx, &h, &place) {
                    *h.lock().unwrap() = (Health::Down, format!("fatal: {e}"));
                    // Keep answering so nobody waits: every request fails (and falls back).
                    while let Ok(Cmd::Work(w, done)) = rx.recv() {
                        let _ = done.send(WorkDone {
                            id: w.id,
                            backend: index,
                            endpoint: None,
                            outcome: WorkOutcome::Failed(BackendError::new(
                                ErrorKind::Fatal,
                                e.clone(),
                            )),
                        });
                    }
                }
            });
        match spawned {
            Ok(t) => {
                me.tx = Some(tx);
                me.thread = Some(t);
            }
            Err(e) => {
                *health.lock().unwrap() = (
                    Health::Down,
                    format!("fatal: cannot start the llama thread: {e}"),
                )
            }
        }
        me
    }
}

impl Backend for LlamaBackendHandle {
    fn name(&self) -> &str {
        &self.name
    }
    fn model_id(&self) -> String {
        self.model_id.clone()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn start(&mut self, work: Work, done: Sender<WorkDone>) {
        match &self.tx {
            Some(tx) => {
                let _ = tx.send(Cmd::Work(work, done));
            }
            None => {
                let msg = self.health.lock().unwrap().1.clone();
                let _ = done.send(WorkDone {
                    id: work.id,
                    backend: self.index,
                    endpoint: None,
                    outcome: WorkOutcome::Failed(BackendError::new(ErrorKind::Fatal, msg)),
                });
            }
        }
    }
    fn health(&self) -> (Health, String) {
        self.health.lock().unwrap().clone()
    }
    fn note(&self) -> Option<String> {
        self.place.lock().unwrap().clone()
    }
    fn available(&self) -> bool {
        self.tx.is_some() && self.health.lock().unwrap().0 != Health::Down
    }
    fn keeps_own_deadlines(&self) -> bool {
        true
    }
}

/// Applies the model's chat template (ChatML when the file has none).
pub fn render_prompt(
    model: &LlamaModel,
    template: &LlamaChatTemplate,
    messages: &[ChatMessage],
) -> Result<String, String> {
    let msgs: Vec<LlamaChatMessage> = messages
        .iter()
        .map(|m| LlamaChatMessage::new(m.role.replace('\0', ""), m.content.replace('\0', "")))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    model
        .apply_chat_template(template, &msgs, true)
        .map_err(|e| e.to_string())
}

/// Loads a model on the CPU (the process-wide backend is initialised on first use); the chat
/// model is placed by [`gpu`].
pub fn load_model(path: &Path) -> Result<LlamaModel, String> {
    gpu::load(path, None, 0)
}

/// llama.cpp's flash-attention policy for the config's switch.
pub fn flash_attention(on: bool) -> llama_cpp_sys_2::llama_flash_attn_type {
    if on {
        llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_ENABLED
    } else {
        llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED
    }
}

/// Default thread count: all cores but one (the game keeps one), at least one.
pub fn default_threads() -> u32 {
    let n = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(2);
    n.saturating_sub(1).max(1)
}
