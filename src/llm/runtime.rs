//! The runtime's router: one thread that owns the queues (by priority), the cache, retries with
//! back-off, timeouts, fail-safe answers, the recording, metrics and health. Backends do the
//! work; the game only sends submissions and drains replies, so a frame never waits.

use super::backend::{
    Backend, BackendError, ErrorKind, Health, Work, WorkDone, WorkKind, WorkOutcome, work_key,
};
use super::config::{BackendConfig, LlmConfig};
use super::metrics::LlmStats;
use super::shape;
use super::types::{Embedding, LlmValue, OutputShape, Priority};
use bevy::prelude::Entity;
use crossbeam_channel::{Receiver, Sender, select, unbounded};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A request as the router sees it.
#[derive(Debug, Clone)]
pub struct Submission {
    /// Id (unique per runtime).
    pub id: u64,
    /// The agent it is for.
    pub agent: Option<Entity>,
    /// Purpose label, for routes and metrics.
    pub purpose: String,
    /// The work.
    pub kind: WorkKind,
    /// Queue priority.
    pub priority: Priority,
    /// The caller's fail-safe (default: a valid value of the shape).
    pub fallback: Option<LlmValue>,
}

/// Where a reply came from.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ReplySource {
    /// A backend, by name.
    Model(String),
    /// The cache.
    Cache,
    /// The fail-safe, and why.
    Fallback(String),
}

/// A finished request.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Reply {
    /// Request id.
    pub id: u64,
    /// The agent it was for.
    #[serde(skip)]
    pub agent: Option<Entity>,
    /// Purpose label.
    pub purpose: String,
    /// The validated value (or the fail-safe).
    pub value: LlmValue,
    /// Raw text of the answer (empty for fallbacks and embeddings).
    pub text: String,
    /// Where it came from.
    pub source: ReplySource,
    /// Time from submission to reply.
    pub latency: Duration,
}

impl Reply {
    /// Whether the value is the fail-safe.
    pub fn is_fallback(&self) -> bool {
        matches!(self.source, ReplySource::Fallback(_))
    }
}

enum ToRouter {
    Submit(Submission),
    Cancel(u64),
    Shutdown,
}

/// Health of one backend as shown in the game.
#[derive(Debug, Clone, Default)]
pub struct BackendStatus {
    /// Name.
    pub name: String,
    /// State.
    pub health: Health,
    /// Detail (an error, "loading model", endpoint states).
    pub detail: String,
    /// Requests running on it.
    pub in_flight: usize,
    /// Requests waiting for it.
    pub queued: usize,
    /// A word or two beside the name (a server's dialect).
    pub note: Option<String>,
}

impl BackendStatus {
    /// The name, with its note: "server [grammar (GBNF)]".
    pub fn label(&self) -> String {
        match &self.note {
            Some(n) => format!("{} [{n}]", self.name),
            None => self.name.clone(),
        }
    }
}

/// The runtime's state for the HUD.
#[derive(Debug, Clone, Default)]
pub struct RuntimeStatus {
    /// Per backend.
    pub backends: Vec<BackendStatus>,
}

impl RuntimeStatus {
    /// Worst health over the backends.
    pub fn overall(&self) -> Health {
        let hs: Vec<Health> = self.backends.iter().map(|b| b.health).collect();
        if hs.contains(&Health::Down) {
            Health::Down
        } else if hs.contains(&Health::Slow) {
            Health::Slow
        } else if hs.contains(&Health::Starting) {
            Health::Starting
        } else {
            Health::Ok
        }
    }
    /// Requests waiting.
    pub fn queued(&self) -> usize {
        self.backends.iter().map(|b| b.queued).sum()
    }
    /// Requests running.
    pub fn in_flight(&self) -> usize {
        self.backends.iter().map(|b| b.in_flight).sum()
    }
}

/// The handle the game (and tools) hold: submit, cancel, drain replies.
pub struct LlmRuntime {
    to_router: Sender<ToRouter>,
    replies: Receiver<Reply>,
    next_id: AtomicU64,
    /// Metrics per purpose.
    pub stats: Arc<Mutex<LlmStats>>,
    /// Health and queues.
    pub status: Arc<Mutex<RuntimeStatus>>,
    /// Model identity of the embeddings now made (it changes when a server turns out to
    /// pool per-token vectors, or to have no embeddings and the local embedder takes over).
    pub embedding_model: Arc<Mutex<String>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LlmRuntime {
    /// Starts the backends and the router thread. Backends that cannot start (a missing model
    /// file) report `Down` with the reason and every request to them falls back.
    pub fn start(config: &LlmConfig) -> Self {
        let backends: Vec<Box<dyn Backend>> = config
            .backends
            .iter()
            .enumerate()
            .map(|(i, b)| make_backend(i, b, config))
            .collect();
        Self::with_backends(config, backends)
    }

    /// Starts the router over given backends (tests inject their own).
    pub fn with_backends(config: &LlmConfig, backends: Vec<Box<dyn Backend>>) -> Self {
        let (to_router, from_game) = unbounded();
        let (reply_tx, replies) = unbounded();
        let stats = Arc::new(Mutex::new(LlmStats::default()));
        let status = Arc::new(Mutex::new(RuntimeStatus::default()));
        let names: Vec<String> = backends.iter().map(|b| b.name().to_string()).collect();
        let route = |name: &str| names.iter().position(|n| n == name).unwrap_or(0);
        let routes: HashMap<String, usize> = config
            .routes
            .iter()
            .map(|(p, b)| (p.clone(), route(b)))
            .collect();
        let embed_backend = config.embedding_backend.as_deref().map(route).unwrap_or(0);
        let embed_fallback = local_embedder(config, &names, embed_backend);
        let embedding_model = Arc::new(Mutex::new(
            backends
                .get(embed_backend)
                .map(|b| b.embedding_model_id())
                .unwrap_or_default(),
        ));
        let recorder = config.record.as_ref().and_then(|p| {
            if let Some(dir) = std::path::Path::new(p).parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| bevy::log::error!("cannot record to {p}: {e}"))
                .ok()
        });
        let (done_tx, done_rx) = unbounded();
        let n = backends.len();
        let router = Router {
            config: config.clone(),
            backends,
            routes,
            embed_backend,
            embed_fallback,
            embedder_told: false,
            embedding_model: embedding_model.clone(),
            queues: (0..n).map(|_| BinaryHeap::new()).collect(),
            jobs: HashMap::new(),
            running: (0..n).map(|_| HashSet::new()).collect(),
            delayed: Vec::new(),
            cache: HashMap::new(),
            cache_order: VecDeque::new(),
            recorder,
            stats: stats.clone(),
            status: status.clone(),
            replies: reply_tx,
            done_tx,
            seq: 0,
            latency: vec![VecDeque::new(); n],
        };
        let thread = std::thread::Builder::new()
            .name("llm-router".into())
            .spawn(move || router.run(from_game, done_rx))
            .expect("spawn the LLM router thread");
        Self {
            to_router,
            replies,
            next_id: AtomicU64::new(1),
            stats,
            status,
            embedding_model,
            thread: Some(thread),
        }
    }

    /// A fresh request id.
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, AtomicOrdering::Relaxed)
    }

    /// Queues a request; the reply arrives on [`Self::try_recv`].
    pub fn submit(&self, sub: Submission) {
        let _ = self.to_router.send(ToRouter::Submit(sub));
    }

    /// Drops a request: no reply will come for it.
    pub fn cancel(&self, id: u64) {
        let _ = self.to_router.send(ToRouter::Cancel(id));
    }

    /// A reply, if one is ready.
    pub fn try_recv(&self) -> Option<Reply> {
        self.replies.try_recv().ok()
    }

    /// Waits for a reply (tools and tests; never in a frame).
    pub fn recv_timeout(&self, d: Duration) -> Option<Reply> {
        self.replies.recv_timeout(d).ok()
    }
}

impl Drop for LlmRuntime {
    fn drop(&mut self) {
        let _ = self.to_router.send(ToRouter::Shutdown);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn make_backend(index: usize, cfg: &BackendConfig, all: &LlmConfig) -> Box<dyn Backend> {
    match cfg {
        BackendConfig::Llama(c) => Box::new(super::backend::llama::LlamaBackendHandle::start(
            index,
            c.clone(),
        )),
        BackendConfig::OpenAi(c) => {
            let probe = Duration::from_secs_f32(all.probe_after_s.max(0.0));
            Box::new(super::backend::openai::OpenAiBackend::with_health(
                index,
                c.clone(),
                all.down_after,
                probe,
            ))
        }
        BackendConfig::Scripted(c) => Box::new(
            super::backend::scripted::ScriptedBackend::from_config(index, c),
        ),
        BackendConfig::Replay(c) => Box::new(super::backend::replay::ReplayBackend::load(index, c)),
        BackendConfig::Bert(c) => Box::new(super::backend::bert::BertBackendHandle::start(
            index,
            c.clone(),
        )),
    }
}

#[derive(PartialEq, Eq)]
struct QueueEntry {
    priority: Priority,
    seq: u64,
    id: u64,
}

impl Ord for QueueEntry {
    fn cmp(&self, o: &Self) -> Ordering {
        // Higher priority first, then first come first served.
        self.priority.cmp(&o.priority).then(o.seq.cmp(&self.seq))
    }
}

impl PartialOrd for QueueEntry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

struct Job {
    sub: Submission,
    backend: usize,
    attempts: u32,
    submitted: Instant,
    started: Option<Instant>,
    cancelled: Arc<AtomicBool>,
    key: String,
    prompt_tokens: u32,
}

struct Router {
    config: LlmConfig,
    backends: Vec<Box<dyn Backend>>,
    routes: HashMap<String, usize>,
    embed_backend: usize,
    /// The local embedder that takes over when the embedding backend has no embeddings.
    embed_fallback: Option<usize>,
    /// Whether the embedding backend's lack of embeddings was reported.
    embedder_told: bool,
    embedding_model: Arc<Mutex<String>>,
    queues: Vec<BinaryHeap<QueueEntry>>,
    jobs: HashMap<u64, Job>,
    running: Vec<HashSet<u64>>,
    delayed: Vec<(Instant, u64)>,
    cache: HashMap<String, (LlmValue, String)>,
    cache_order: VecDeque<String>,
    recorder: Option<std::fs::File>,
    stats: Arc<Mutex<LlmStats>>,
    status: Arc<Mutex<RuntimeStatus>>,
    replies: Sender<Reply>,
    done_tx: Sender<WorkDone>,
    seq: u64,
    latency: Vec<VecDeque<Duration>>,
}

impl Router {
    fn run(mut self, from_game: Receiver<ToRouter>, done_rx: Receiver<WorkDone>) {
        self.publish_status();
        loop {
            let wait = self.next_wakeup();
            select! {
                recv(from_game) -> msg => match msg {
                    Ok(ToRouter::Submit(s)) => self.accept(s),
                    Ok(ToRouter::Cancel(id)) => self.cancel(id),
                    Ok(ToRouter::Shutdown) | Err(_) => break,
                },
                recv(done_rx) -> d => if let Ok(d) = d { self.finish(d) },
                default(wait) => {}
            }
            // Take everything else that is ready before dispatching, so a burst of submissions
            // is ordered by priority rather than by arrival.
            while let Ok(msg) = from_game.try_recv() {
                match msg {
                    ToRouter::Submit(s) => self.accept(s),
                    ToRouter::Cancel(id) => self.cancel(id),
                    ToRouter::Shutdown => return,
                }
            }
            while let Ok(d) = done_rx.try_recv() {
                self.finish(d);
            }
            self.expire_hung();
            self.release_delayed();
            self.dispatch();
            self.publish_status();
        }
    }

    fn next_wakeup(&self) -> Duration {
        let now = Instant::now();
        let soonest = self
            .delayed
            .iter()
            .map(|(t, _)| t.saturating_duration_since(now))
            .min();
        soonest
            .unwrap_or(Duration::from_millis(200))
            .min(Duration::from_millis(200))
    }

    fn accept(&mut self, sub: Submission) {
        let backend = match &sub.kind {
            WorkKind::Embed { .. } => self.embed_backend,
            WorkKind::Chat { .. } => self.routes.get(&sub.purpose).copied().unwrap_or(0),
        };
        let key = work_key(&sub.kind);
        self.stats.lock().unwrap().purpose(&sub.purpose).calls += 1;
        // Invalid shapes (an empty choice list) can never be answered: fail-safe at once.
        if let WorkKind::Chat { shape: s, .. } = &sub.kind
            && let Err(e) = shape::grammar(s)
        {
            let job = Job {
                sub,
                backend,
                attempts: 0,
                submitted: Instant::now(),
                started: None,
                cancelled: Arc::default(),
                key,
                prompt_tokens: 0,
            };
            self.fallback(job, format!("bad request: {e}"));
            return;
        }
        if self.config.cache && cacheable(&sub.kind) {
            let ck = self.cache_key(backend, &key);
            if let Some((value, text)) = self.cache.get(&ck).cloned() {
                self.stats.lock().unwrap().purpose(&sub.purpose).cache_hits += 1;
                let _ = self.replies.send(Reply {
                    id: sub.id,
                    agent: sub.agent,
                    purpose: sub.purpose,
                    value,
                    text,
                    source: ReplySource::Cache,
                    latency: Duration::ZERO,
                });
                return;
            }
        }
        let id = sub.id;
        let priority = sub.priority;
        self.jobs.insert(
            id,
            Job {
                sub,
                backend,
                attempts: 0,
                submitted: Instant::now(),
                started: None,
                cancelled: Arc::default(),
                key,
                prompt_tokens: 0,
            },
        );
        self.enqueue(backend, id, priority);
    }

    fn enqueue(&mut self, backend: usize, id: u64, priority: Priority) {
        self.seq += 1;
        self.queues[backend].push(QueueEntry {
            priority,
            seq: self.seq,
            id,
        });
    }

    fn cache_key(&self, backend: usize, key: &str) -> String {
        format!("{}\u{1}{key}", self.backends[backend].model_id())
    }

    fn cancel(&mut self, id: u64) {
        if let Some(job) = self.jobs.remove(&id) {
            job.cancelled.store(true, AtomicOrdering::Relaxed);
            self.running[job.backend].remove(&id);
        }
        self.delayed.retain(|(_, d)| *d != id);
    }

    fn dispatch(&mut self) {
        let now = Instant::now();
        let timeout = Duration::from_secs_f32(self.config.timeout_s);
        for b in 0..self.backends.len() {
            while let Some(entry) = self.queues[b].peek() {
                let id = entry.id;
                if !self.jobs.contains_key(&id) {
                    self.queues[b].pop(); // cancelled while queued
                    continue;
                }
                if !self.backends[b].available() {
                    // Down: answer waiting requests now (retry later or fail safe), never let
                    // agents wait on an endpoint that is not there.
                    self.queues[b].pop();
                    if let Some(job) = self.jobs.get_mut(&id) {
                        job.attempts += 1; // a refused attempt counts, or callers would wait for the probe
                    }
                    let (health, detail) = self.backends[b].health();
                    let kind = if health == Health::Down && detail.starts_with("fatal:") {
                        ErrorKind::Fatal
                    } else {
                        ErrorKind::Down
                    };
                    self.failed(
                        id,
                        BackendError::new(
                            kind,
                            format!("{} is down: {detail}", self.backends[b].name()),
                        ),
                    );
                    continue;
                }
                if self.running[b].len() >= self.backends[b].capacity() {
                    break;
                }
                self.queues[b].pop();
                let job = self.jobs.get_mut(&id).expect("checked above");
                job.attempts += 1;
                job.started = Some(now);
                let mut kind = job.sub.kind.clone();
                if job.attempts > 1
                    && let WorkKind::Chat { sampling, .. } = &mut kind
                {
                    // A retry of a greedy request would give the same answer: vary it. Most
                    // failed answers were cut off at the token budget (a small model repeating
                    // itself inside a string), so the retry also gets twice the room.
                    sampling.temperature = sampling.temperature.max(0.7);
                    sampling.seed = sampling.seed.wrapping_add(job.attempts);
                    sampling.max_tokens = sampling.max_tokens.saturating_mul(2);
                }
                let work = Work {
                    id,
                    purpose: job.sub.purpose.clone(),
                    kind,
                    deadline: now + timeout,
                    cancelled: job.cancelled.clone(),
                };
                self.running[b].insert(id);
                self.backends[b].start(work, self.done_tx.clone());
            }
        }
    }

    /// A backend that never answers must not hold a request forever.
    fn expire_hung(&mut self) {
        let grace = Duration::from_secs_f32(self.config.timeout_s) + Duration::from_secs(2);
        let now = Instant::now();
        let hung: Vec<u64> = self
            .running
            .iter()
            .flatten()
            .copied()
            .filter(|id| {
                self.jobs.get(id).is_some_and(|j| {
                    !self.backends[j.backend].keeps_own_deadlines()
                        && j.started.is_some_and(|s| now.duration_since(s) > grace)
                })
            })
            .collect();
        for id in hung {
            if let Some(job) = self.jobs.get(&id) {
                job.cancelled.store(true, AtomicOrdering::Relaxed);
                let b = job.backend;
                self.running[b].remove(&id);
                self.failed(
                    id,
                    BackendError::new(ErrorKind::Timeout, "no answer before the deadline"),
                );
            }
        }
    }

    fn release_delayed(&mut self) {
        let now = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = self.delayed.drain(..).partition(|(t, _)| *t <= now);
        self.delayed = later;
        for (_, id) in due {
            if let Some(job) = self.jobs.get_mut(&id) {
                // A fresh cancellation flag: the old one may have been set when it timed out.
                job.cancelled = Arc::default();
                let (b, p) = (job.backend, job.sub.priority);
                self.enqueue(b, id, p);
            }
        }
    }

    fn finish(&mut self, done: WorkDone) {
        if let Some(b) = self.backends.get_mut(done.backend) {
            b.observe(&done);
        }
        if !self.running[done.backend].remove(&done.id) {
            return; // cancelled or already timed out
        }
        let Some(job) = self.jobs.get_mut(&done.id) else {
            return;
        };
        let latency = job.started.map(|s| s.elapsed()).unwrap_or_default();
        let lat = &mut self.latency[done.backend];
        lat.push_back(latency);
        if lat.len() > 20 {
            lat.pop_front();
        }
        match done.outcome {
            WorkOutcome::Text {
                text,
                prompt_tokens,
                cached_tokens,
                gen_tokens,
            } => {
                job.prompt_tokens += prompt_tokens;
                {
                    let mut st = self.stats.lock().unwrap();
                    let p = st.purpose(&job.sub.purpose);
                    p.prompt_tokens += prompt_tokens as u64;
                    p.cached_prompt_tokens += cached_tokens as u64;
                    p.gen_tokens += gen_tokens as u64;
                }
                let WorkKind::Chat {
                    shape: s, sampling, ..
                } = &job.sub.kind
                else {
                    return;
                };
                match shape::parse(s, &text) {
                    Ok(value) => {
                        let deterministic = sampling.deterministic() && job.attempts == 1;
                        let job = self.jobs.remove(&done.id).expect("present");
                        self.answer(job, value, text, deterministic);
                    }
                    Err(e) => {
                        self.stats
                            .lock()
                            .unwrap()
                            .purpose(&job.sub.purpose)
                            .parse_failures += 1;
                        self.failed(
                            done.id,
                            BackendError::new(
                                ErrorKind::Malformed,
                                format!("invalid answer {text:?}: {e}"),
                            ),
                        );
                    }
                }
            }
            WorkOutcome::Vector {
                vector,
                model,
                prompt_tokens,
            } => {
                self.stats
                    .lock()
                    .unwrap()
                    .purpose(&job.sub.purpose)
                    .prompt_tokens += prompt_tokens as u64;
                if done.backend == self.embed_backend {
                    let mut current = self.embedding_model.lock().unwrap();
                    if *current != model {
                        *current = model.clone();
                    }
                }
                let job = self.jobs.remove(&done.id).expect("present");
                self.answer(
                    job,
                    LlmValue::Embedding(Embedding { model, vector }),
                    String::new(),
                    true,
                );
            }
            WorkOutcome::Failed(e) => self.failed(done.id, e),
        }
    }

    fn answer(&mut self, job: Job, value: LlmValue, text: String, cacheable_now: bool) {
        let latency = job.submitted.elapsed();
        self.stats
            .lock()
            .unwrap()
            .purpose(&job.sub.purpose)
            .record_latency(latency);
        if self.config.cache && cacheable_now && cacheable(&job.sub.kind) {
            let ck = self.cache_key(job.backend, &job.key);
            if self
                .cache
                .insert(ck.clone(), (value.clone(), text.clone()))
                .is_none()
            {
                self.cache_order.push_back(ck);
                while self.cache_order.len() > self.config.cache_entries {
                    if let Some(old) = self.cache_order.pop_front() {
                        self.cache.remove(&old);
                    }
                }
            }
        }
        if let Some(f) = self.recorder.as_mut() {
            let line = match &value {
                LlmValue::Embedding(e) => {
                    serde_json::json!({"key": job.key, "purpose": job.sub.purpose, "vector": e.vector, "model": e.model})
                }
                _ => serde_json::json!({"key": job.key, "purpose": job.sub.purpose, "text": text}),
            };
            let _ = writeln!(f, "{line}");
        }
        let source = ReplySource::Model(self.backends[job.backend].name().to_string());
        let _ = self.replies.send(Reply {
            id: job.sub.id,
            agent: job.sub.agent,
            purpose: job.sub.purpose,
            value,
            text,
            source,
            latency,
        });
    }

    fn failed(&mut self, id: u64, err: BackendError) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        if err.kind == ErrorKind::Unsupported && matches!(job.sub.kind, WorkKind::Embed { .. }) {
            let from = job.backend;
            if from == self.embed_backend {
                self.switch_embedder(&err.message);
            }
            if self.embed_backend != from
                && let Some(job) = self.jobs.get_mut(&id)
            {
                // Not a failure of this request: it moves to the embedder that can do it.
                job.backend = self.embed_backend;
                job.attempts = 0;
                job.started = None;
                job.cancelled = Arc::default();
                let (b, p) = (job.backend, job.sub.priority);
                self.enqueue(b, id, p);
                return;
            }
        }
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let attempts = job.attempts;
        {
            let mut st = self.stats.lock().unwrap();
            let p = st.purpose(&job.sub.purpose);
            p.failures += 1;
            p.last_error = Some(err.message.clone());
        }
        if err.retryable() && attempts <= self.config.retries {
            self.stats.lock().unwrap().purpose(&job.sub.purpose).retries += 1;
            let backoff = Duration::from_millis(
                self.config
                    .backoff_ms
                    .saturating_mul(1 << attempts.saturating_sub(1).min(10)),
            );
            self.delayed.push((Instant::now() + backoff, id));
            if let Some(j) = self.jobs.get_mut(&id) {
                j.started = None;
            }
            return;
        }
        let job = self.jobs.remove(&id).expect("present");
        self.fallback(job, err.message);
    }

    /// The embedding backend has no embeddings: says so once, and the local embedder (if one is
    /// configured) makes them from now on.
    fn switch_embedder(&mut self, why: &str) {
        if self.embedder_told {
            return;
        }
        self.embedder_told = true;
        let from = self.backends[self.embed_backend].name().to_string();
        match self.embed_fallback.take() {
            Some(to) => {
                self.embed_backend = to;
                let model = self.backends[to].embedding_model_id();
                eprintln!(
                    "llm: backend '{from}' makes no embeddings ({why}); embeddings now come from '{}' ({model})",
                    self.backends[to].name()
                );
                *self.embedding_model.lock().unwrap() = model;
            }
            None => eprintln!(
                "llm: backend '{from}' makes no embeddings ({why}) and no local embedder is configured (add a Bert backend): memories are retrieved by recency and importance only"
            ),
        }
    }

    fn fallback(&mut self, job: Job, reason: String) {
        self.stats
            .lock()
            .unwrap()
            .purpose(&job.sub.purpose)
            .fallbacks += 1;
        let value = job
            .sub
            .fallback
            .clone()
            .unwrap_or_else(|| default_value(&job.sub.kind));
        let _ = self.replies.send(Reply {
            id: job.sub.id,
            agent: job.sub.agent,
            purpose: job.sub.purpose,
            value,
            text: String::new(),
            source: ReplySource::Fallback(reason),
            latency: job.submitted.elapsed(),
        });
    }

    fn publish_status(&mut self) {
        let slow = Duration::from_secs_f32(self.config.slow_after_s);
        let backends = self
            .backends
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let (mut health, detail) = b.health();
                let lat = &self.latency[i];
                if health == Health::Ok
                    && !lat.is_empty()
                    && lat.iter().sum::<Duration>() / lat.len() as u32 > slow
                {
                    health = Health::Slow;
                }
                BackendStatus {
                    name: b.name().to_string(),
                    health,
                    detail,
                    in_flight: self.running[i].len(),
                    queued: self.queues[i].len(),
                    note: b.note(),
                }
            })
            .collect();
        self.status.lock().unwrap().backends = backends;
    }
}

/// The configured local embedder to fall back on: the first Bert backend, else the first Llama
/// one, else a Scripted one (bag of words), that is not the embedding backend itself.
fn local_embedder(config: &LlmConfig, names: &[String], embed_backend: usize) -> Option<usize> {
    let index = |b: &BackendConfig| names.iter().position(|n| n == b.name());
    let of_kind = |kind: u8| {
        config.backends.iter().find(|b| {
            index(b) != Some(embed_backend)
                && kind
                    == match b {
                        BackendConfig::Bert(_) => 0,
                        BackendConfig::Llama(_) => 1,
                        BackendConfig::Scripted(_) => 2,
                        _ => 3,
                    }
        })
    };
    (0..3).find_map(of_kind).and_then(index)
}

fn cacheable(kind: &WorkKind) -> bool {
    match kind {
        WorkKind::Chat { sampling, .. } => sampling.deterministic(),
        WorkKind::Embed { .. } => true,
    }
}

/// A valid value of a request's shape, used when the caller gave no fail-safe.
pub fn default_value(kind: &WorkKind) -> LlmValue {
    match kind {
        WorkKind::Embed { .. } => LlmValue::Embedding(Embedding {
            model: "unavailable".into(),
            vector: Vec::new(),
        }),
        WorkKind::Chat { shape, .. } => match shape {
            OutputShape::Text => LlmValue::Text(String::new()),
            OutputShape::Integer { min, max } => {
                LlmValue::Integer((*min).max((*min + *max) / 2).min(*max))
            }
            OutputShape::Choice(o) => LlmValue::Choice(0, o.first().cloned().unwrap_or_default()),
            OutputShape::YesNo => LlmValue::Bool(false),
            OutputShape::Lines(n) => LlmValue::Lines(vec![String::new(); *n]),
            OutputShape::Integers { count, min, max } => {
                LlmValue::Integers(vec![(*min).max((*min + *max) / 2).min(*max); *count])
            }
            OutputShape::Json(_) => LlmValue::Json(serde_json::Value::Null),
        },
    }
}
