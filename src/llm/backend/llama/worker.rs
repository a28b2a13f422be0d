//! The llama worker thread: it loads the models and runs continuous batching over the slots
//! (take new work, run waiting embeddings, admit chats into free slots with prefix reuse, drop
//! cancelled and late work, decode one batch, sample each slot whose logits are ready).
//! Admission is in `worker/admit.rs`.

mod admit;
mod layout;
mod prefixes;
pub mod work;

use super::embed::Embedder;
use super::sampling::ShapedSampler;
use super::threads::{LoadWatch, set_threads};
use super::{Cmd, default_threads, global_backend, load_model, resolve_model};
use crate::llm::backend::{BackendError, ErrorKind, Health, Work, WorkDone, WorkKind, WorkOutcome};
use crate::llm::config::LlamaConfig;
use crossbeam_channel::{Receiver, Sender};
use llama_cpp_2::DecodeError;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::{LlamaChatTemplate, LlamaModel};
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::vocab::LlamaVocab;
use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

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
    /// What of the answer is watched for loops (`stop_loops`).
    watch: super::loops::Watch,
    i_batch: Option<i32>,
    last: Option<LlamaToken>,
    out: Vec<u8>,
    n_gen: u32,
    max_tokens: u32,
    prompt_tokens: u32,
    cached_tokens: u32,
    /// Where the prompt's identity prefix and its stable part end, while they are being read
    /// and are not kept yet: the prompt is read up to each in chunks that stop there, and the
    /// prefix is then kept ([`prefixes`]).
    save_at: Vec<prefixes::SavePoint>,
    /// What the answer's shape forces next (`write_forced`; `llm::forced`).
    forcer: crate::llm::forced::Forcer,
    /// How many of `pending` are prompt tokens (the rest are the answer's: text its shape
    /// forces, after the token sampled before it).
    prompt_left: usize,
}

/// Takes what the answer's shape forces after what it holds (each token checked against its
/// grammar): the tokens taken, to be read in one decode, and whether the answer is whole
/// after them (nothing more may follow: it is delivered without another decode).
fn take_forced(vocab: &LlamaVocab, j: &mut Active) -> (Vec<LlamaToken>, bool) {
    let next = j.forcer.next(&j.out);
    if next.text.is_empty() {
        return (Vec::new(), next.complete);
    }
    let tokens = vocab.tokenize(next.text.as_bytes(), false, false);
    let mut taken = Vec::with_capacity(tokens.len());
    for &t in &tokens {
        if !j.sampler.force(t) {
            break;
        }
        j.out.extend(vocab.token_to_piece(t, false, None));
        taken.push(t);
    }
    j.n_gen += taken.len() as u32;
    work::count_forced(taken.len());
    let whole = next.complete && taken.len() == tokens.len();
    (taken, whole)
}

/// Delivers a finished answer (`whole`: ended the moment its shape was complete).
fn deliver(index: usize, j: Active, looped: Option<String>, whole: bool) {
    let text = String::from_utf8_lossy(&j.out).to_string();
    if whole && looped.is_none() {
        work::count_ended_whole();
    }
    let _ = j.done.send(WorkDone {
        id: j.id,
        backend: index,
        endpoint: None,
        outcome: WorkOutcome::Text {
            text,
            prompt_tokens: j.prompt_tokens,
            cached_tokens: j.cached_tokens,
            gen_tokens: j.n_gen,
            looped,
        },
    });
}

struct Slot {
    seq: i32,
    /// Tokens whose KV entries this sequence holds, at positions 0..len.
    cached: Vec<LlamaToken>,
    /// How many of `cached`, from the start, were read as a prompt (not generated): with
    /// `batch_invariant` only they are reused (a generated token was computed alone in its
    /// sequence, a read one with others).
    read: usize,
    job: Option<Active>,
}

impl Slot {
    /// What of the cache a new prompt may reuse.
    fn reusable(&self, exact: bool) -> &[LlamaToken] {
        if exact {
            &self.cached[..self.read.min(self.cached.len())]
        } else {
            &self.cached
        }
    }
}

/// The worker thread's body: loads the models, then serves requests until the handle is gone.
/// An error is fatal for the backend (the caller marks it down).
pub(super) fn run(
    index: usize,
    mut cfg: LlamaConfig,
    path: PathBuf,
    rx: &Receiver<Cmd>,
    health: &Arc<Mutex<(Health, String)>>,
    place: &Mutex<Option<String>>,
) -> Result<(), String> {
    let backend = global_backend()?;
    let threads = cfg.threads.unwrap_or_else(default_threads);
    // The files read (their Q8_0 copies where `weights` asks for them) name the answers.
    let path = super::weights::prepare(&path, cfg.weights, threads);
    cfg.embedding_model = cfg.embedding_model.as_deref().map(|p| {
        super::weights::prepare(&resolve_model(p), cfg.weights, threads)
            .to_string_lossy()
            .to_string()
    });
    let emb_model = match &cfg.embedding_model {
        Some(p) => Some(load_model(&resolve_model(p))?),
        None => None,
    };
    super::gpu::with_placed(&path, &cfg, |model, placement| {
        let mut worker = Worker::new(
            index,
            cfg.clone(),
            path.clone(),
            backend,
            model,
            emb_model.as_ref(),
            health,
            placement,
        )?;
        *place.lock().unwrap() = Some(placement.short());
        Ok(worker.serve(rx))
    })?
}

/// The worker's state. It borrows the models (loaded by [`run`], which outlives it); the
/// contexts borrow them too. Fields drop in the order they are declared here, the reverse of
/// the order they are made in.
struct Worker<'m> {
    vocab: LlamaVocab<'m>,
    batch: LlamaBatch<'static>,
    /// When each queued request reached this worker.
    arrived: std::collections::HashMap<u64, Instant>,
    queue: VecDeque<(Work, Sender<WorkDone>)>,
    slots: Vec<Slot>,
    /// Companion tokens of the decode being made (sequence, position), dropped after it.
    companions: Vec<(i32, u32)>,
    embedder: Option<Embedder<'m>>,
    embed_id: String,
    template: LlamaChatTemplate,
    /// The most one request may hold.
    per_request: usize,
    ctx: LlamaContext<'m>,
    /// Whether each slot has its own stream of the KV cache.
    split: bool,
    threads: i32,
    /// Chooses the threads of each decode from the load (`adapt_threads`).
    load: LoadWatch,
    /// Identity prefixes kept beside the cache (`kept_prefixes_mb`).
    prefixes: prefixes::Prefixes<LlamaToken, llama_cpp_2::context::session::SeqState>,
    emb_model: Option<&'m LlamaModel>,
    model: &'m LlamaModel,
    backend: &'static LlamaBackend,
    index: usize,
    cfg: LlamaConfig,
}

impl<'m> Worker<'m> {
    /// Creates the context (one sequence per slot) and reports the backend up.
    fn new(
        index: usize,
        cfg: LlamaConfig,
        path: PathBuf,
        backend: &'static LlamaBackend,
        model: &'m LlamaModel,
        emb_model: Option<&'m LlamaModel>,
        health: &Arc<Mutex<(Health, String)>>,
        placement: &super::gpu::Placement,
    ) -> Result<Self, String> {
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
            .with_n_threads_batch(threads)
            .with_flash_attention_policy(super::flash_attention(cfg.flash_attention));
        let ctx = model
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
        let embedder: Option<Embedder> = None;
        let slots: Vec<Slot> = (0..n_slots as i32)
            .map(|seq| Slot {
                seq,
                cached: Vec::new(),
                read: 0,
                job: None,
            })
            .collect();
        let queue: VecDeque<(Work, Sender<WorkDone>)> = VecDeque::new();
        let arrived: std::collections::HashMap<u64, Instant> = std::collections::HashMap::new();
        let batch = LlamaBatch::new(cfg.batch as usize, 1);
        *health.lock().unwrap() = (
            Health::Ok,
            format!(
                "{} on {threads} thread(s), {n_slots} slots, {}",
                path.file_name().unwrap_or_default().to_string_lossy(),
                placement.line()
            ),
        );
        let vocab = model.vocab();
        Ok(Self {
            vocab,
            batch,
            arrived,
            queue,
            slots,
            companions: Vec::new(),
            embedder,
            embed_id,
            template,
            per_request,
            ctx,
            split,
            threads,
            load: LoadWatch::new(threads, cfg.adapt_threads),
            prefixes: prefixes::Prefixes::new(if cfg.prefix_cache {
                cfg.kept_prefixes_mb as usize * 1024 * 1024
            } else {
                0
            }),
            emb_model,
            model,
            backend,
            index,
            cfg,
        })
    }

    /// The decode loop; it returns when the handle is gone (the game is closing).
    fn serve(&mut self, rx: &Receiver<Cmd>) -> Result<(), String> {
        loop {
            // 1. Take new work (block only when idle).
            if !self.take_work(rx) {
                return Ok(());
            }

            // 2. Embeddings run between decode rounds, all waiting ones together.
            self.run_embeddings()?;

            // 3. Admit waiting chats into free slots, reusing the longest cached prefix.
            self.admit();

            // 4. Drop cancelled and late work.
            self.drop_cancelled_and_late();
            if self.slots.iter().all(|s| s.job.is_none()) {
                continue;
            }

            // 5. One batch: each generating slot's next token, then prompt chunks.
            let (added, layout) = self.fill_batch()?;
            if self.batch.n_tokens() == 0 {
                continue;
            }
            self.use_threads();
            let started = Instant::now();
            let decoded = self.ctx.decode(&mut self.batch);
            for (seq, pos) in std::mem::take(&mut self.companions) {
                let _ = self.ctx.kv_cache_seq_rm(seq, Some(pos), None);
            }
            if let Err(e) = decoded {
                self.decode_failed(e);
                continue;
            }
            let took = started.elapsed();
            work::count_passes(work::passes(&layout, self.cfg.batch as usize));
            let mut seqs: Vec<usize> = added.iter().map(|(i, _)| *i).collect();
            seqs.sort_unstable();
            let runs = 1 + seqs.windows(2).filter(|w| w[1] != w[0] + 1).count() as u64;
            let (generating, read) = self.commit(added);
            work::count_decode(generating, read, runs, took);
            self.keep_prefixes();

            // 6. Sample each slot whose logits are ready.
            let started = Instant::now();
            self.sample();
            work::count_sampling(started.elapsed());
        }
    }

    /// Decodes (and embeds) with the threads the load leaves from now on.
    fn use_threads(&mut self) {
        let n = self.load.threads();
        if n != self.threads {
            if set_threads(&self.ctx, n) {
                self.threads = n;
                work::count_threads_change();
            } else {
                self.load = LoadWatch::new(self.threads, false);
            }
        }
        work::count_threads(self.threads);
    }

    /// Queues what has arrived, blocking only when idle; false when the handle is gone.
    fn take_work(&mut self, rx: &Receiver<Cmd>) -> bool {
        let idle = self.slots.iter().all(|s| s.job.is_none()) && self.queue.is_empty();
        if idle {
            match rx.recv() {
                Ok(Cmd::Work(w, d)) => {
                    self.arrived.insert(w.id, Instant::now());
                    self.queue.push_back((w, d))
                }
                Err(_) => return false,
            }
            // Requests come in bursts (many agents at once): wait a moment for the rest of the
            // burst, so their prompts share the first decode instead of queueing behind it.
            let window = Instant::now() + std::time::Duration::from_millis(20);
            while let Ok(Cmd::Work(w, d)) = rx.recv_timeout(std::time::Duration::from_millis(2)) {
                self.arrived.insert(w.id, Instant::now());
                self.queue.push_back((w, d));
                if Instant::now() > window {
                    break;
                }
            }
        }
        loop {
            match rx.try_recv() {
                Ok(Cmd::Work(w, d)) => {
                    self.arrived.insert(w.id, Instant::now());
                    self.queue.push_back((w, d))
                }
                Err(crossbeam_channel::TryRecvError::Empty) => break,
                // The handle is gone (the game is closing): stop now, whatever is in flight.
                Err(crossbeam_channel::TryRecvError::Disconnected) => return false,
            }
        }
        true
    }

    /// Embeds every queued embedding request (the embedding context is made on first use).
    fn run_embeddings(&mut self) -> Result<(), String> {
        let (embeds, chats): (VecDeque<_>, VecDeque<_>) = self
            .queue
            .drain(..)
            .partition(|(w, _)| matches!(w.kind, WorkKind::Embed { .. }));
        self.queue = chats;
        if !embeds.is_empty() {
            let m = self.emb_model.unwrap_or(self.model);
            if self.embedder.is_none() {
                self.embedder = Some(
                    Embedder::new(m, self.backend, self.threads, self.cfg.flash_attention)
                        .map_err(|e| format!("cannot create the embedding context: {e}"))?,
                );
            }
            self.use_threads();
            let e = self.embedder.as_mut().expect("created above");
            e.set_threads(self.threads);
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
                    self.arrived.remove(&w.id);
                    let outcome = match r {
                        Ok((vector, n)) => WorkOutcome::Vector {
                            vector,
                            model: self.embed_id.clone(),
                            prompt_tokens: n,
                        },
                        Err(err) => WorkOutcome::Failed(BackendError::new(ErrorKind::Fatal, err)),
                    };
                    let _ = d.send(WorkDone {
                        id: w.id,
                        backend: self.index,
                        endpoint: None,
                        outcome,
                    });
                }
            }
        }
        Ok(())
    }

    /// Drops cancelled work, and fails work that made no progress within its time limit.
    fn drop_cancelled_and_late(&mut self) {
        let now = Instant::now();
        for s in self.slots.iter_mut() {
            let Some(j) = &s.job else { continue };
            if j.cancelled.load(Ordering::Relaxed) {
                s.job = None;
            } else if now > j.last_progress + j.timeout {
                let j = s.job.take().expect("checked");
                let _ = j.done.send(WorkDone {
                    id: j.id,
                    backend: self.index,
                    endpoint: None,
                    outcome: WorkOutcome::Failed(BackendError::new(
                        ErrorKind::Timeout,
                        "llama: past the deadline",
                    )),
                });
            }
        }
    }

    /// Fills the batch: a generating slot's next token, and what a slot has to read (its
    /// prompt, or a sampled token with the text its shape forces), laid out by
    /// [`layout::invariant`] (`batch_invariant`) or [`layout::shares`]. Returns the slots'
    /// parts in batch order (slot, tokens taken from its pending tokens; 0 for a generated
    /// token) and the batch's layout (sequence, tokens; companions included).
    #[allow(clippy::type_complexity)]
    fn fill_batch(&mut self) -> Result<(Vec<(usize, usize)>, Vec<(i32, usize)>), String> {
        self.batch.clear();
        let cap = self.cfg.batch as usize;
        // What each busy slot can read now (0: it generates), up to a prefix to keep, which
        // is read alone so that the slot holds exactly it afterwards.
        let can: Vec<(usize, usize)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let j = s.job.as_ref()?;
                if j.pending.is_empty() {
                    return j.last.map(|_| (i, 0));
                }
                let mut n = j.pending.len();
                if let Some(at) = prefixes::next_save(&j.save_at, s.cached.len()) {
                    n = n.min(at - s.cached.len());
                }
                Some((i, n))
            })
            .collect();
        for s in self.slots.iter_mut() {
            if let Some(j) = s.job.as_mut() {
                j.i_batch = None; // no logits to sample unless added below
            }
        }
        let exact = self.exact();
        let parts = if exact {
            let stream = self.per_request + 8;
            let slots = &self.slots;
            layout::invariant(&can, slots.len(), cap, |i| {
                slots[i].cached.len() + 1 < stream
            })
        } else {
            layout::shares(&can, cap, self.split && self.cfg.pack_batches)
                .into_iter()
                .map(|(slot, take)| layout::Part {
                    slot,
                    take,
                    companion: false,
                })
                .collect()
        };
        let mut added: Vec<(usize, usize)> = Vec::new();
        let mut laid: Vec<(i32, usize)> = Vec::new();
        for layout::Part {
            slot: i,
            take,
            companion,
        } in parts
        {
            let s = &mut self.slots[i];
            laid.push((s.seq, take.max(1)));
            if companion {
                let pos = s.cached.len() as u32;
                self.batch
                    .add(LlamaToken::new(0), pos as i32, &[s.seq], true)
                    .map_err(|e| e.to_string())?;
                self.companions.push((s.seq, pos));
                continue;
            }
            let Some(j) = s.job.as_mut() else { continue };
            if take == 0 {
                let t = j.last.expect("a generating slot has its token");
                self.batch
                    .add(t, s.cached.len() as i32, &[s.seq], true)
                    .map_err(|e| e.to_string())?;
                j.i_batch = Some(self.batch.n_tokens() - 1);
                added.push((i, 0));
                continue;
            }
            let start = s.cached.len();
            // Finishing with `batch_invariant`: the logits of the last two tokens, so that the
            // pass never has exactly one output.
            let outputs = if exact { 2 } else { 1 };
            for k in 0..take {
                let last = k + outputs >= j.pending.len() && take == j.pending.len();
                self.batch
                    .add(j.pending[k], (start + k) as i32, &[s.seq], last)
                    .map_err(|e| e.to_string())?;
            }
            if take == j.pending.len() {
                j.i_batch = Some(self.batch.n_tokens() - 1);
            }
            added.push((i, take));
        }
        Ok((added, laid))
    }

    /// Whether batches are laid out batch-invariant (`batch_invariant`, the cache split).
    fn exact(&self) -> bool {
        self.split && self.cfg.batch_invariant
    }

    /// The shared KV cache is full: forget idle slots' cached prompts and try again; if
    /// nothing idle is left, the biggest request gives way.
    fn decode_failed(&mut self, e: DecodeError) {
        let slots = &mut self.slots;
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
            let _ = self.ctx.kv_cache_seq_rm(s.seq, None, None);
            s.cached.clear();
            s.read = 0;
            let _ = j.done.send(WorkDone {
                id: j.id,
                backend: self.index,
                endpoint: None,
                outcome: WorkOutcome::Failed(BackendError::new(
                    ErrorKind::Malformed,
                    format!("llama decode failed ({e}); retrying"),
                )),
            });
        }
        for i in idle {
            let _ = self.ctx.kv_cache_seq_rm(slots[i].seq, None, None);
            slots[i].cached.clear();
            slots[i].read = 0;
        }
        for s in slots.iter_mut() {
            if let Some(j) = s.job.as_mut() {
                j.i_batch = None;
            }
        }
    }

    /// Commits what was decoded: the tokens join their slots' caches, and the slots made
    /// progress. Returns the sequences that were generating (a sampled token, alone or with
    /// text its shape forces) and the prompt tokens read.
    fn commit(&mut self, added: Vec<(usize, usize)>) -> (u64, u64) {
        let decoded_at = Instant::now();
        let (mut generating, mut read) = (0, 0);
        for (i, took) in added {
            let s = &mut self.slots[i];
            let Some(j) = s.job.as_mut() else { continue };
            j.last_progress = decoded_at;
            if took == 0 {
                generating += 1;
                if let Some(t) = j.last {
                    s.cached.push(t);
                }
            } else {
                let prompt = took.min(j.prompt_left);
                j.prompt_left -= prompt;
                read += prompt as u64;
                generating += u64::from(prompt == 0);
                if s.read == s.cached.len() {
                    s.read += took;
                }
                s.cached.extend(j.pending.drain(..took));
            }
        }
        (generating, read)
    }

    /// Samples each slot whose logits are ready, and delivers the requests that finished
    /// (end of generation, or the token budget spent).
    fn sample(&mut self) {
        for s in self.slots.iter_mut() {
            let Some(j) = s.job.as_mut() else { continue };
            let Some(ib) = j.i_batch.take() else { continue };
            let tok = j.sampler.sample(&self.ctx, ib);
            let mut looped = None;
            let mut ended_whole = false;
            let finished = if self.vocab.is_eog(tok) {
                true
            } else {
                j.out.extend(self.vocab.token_to_piece(tok, false, None));
                j.n_gen += 1;
                let (forced, whole) = take_forced(&self.vocab, j);
                looped = super::loops::looping(&j.out, j.watch);
                if forced.is_empty() {
                    j.last = Some(tok);
                } else {
                    // The sampled token and the text forced after it are read in one decode.
                    j.last = None;
                    j.pending.push(tok);
                    j.pending.extend(forced);
                }
                ended_whole = whole;
                whole || looped.is_some() || j.n_gen >= j.max_tokens
            };
            if finished {
                deliver(
                    self.index,
                    s.job.take().expect("present"),
                    looped,
                    ended_whole,
                );
            }
        }
    }
}
