//! The runtime's router: one thread that owns the queues (by priority), the cache, retries with
//! back-off, timeouts, fail-safe answers, the recording, metrics and health. Backends do the
//! work; the game only sends submissions and drains replies, so a frame never waits.
//!
//! This file holds what the game sees (submissions, replies, status, the [`LlmRuntime`]
//! handle); the router thread is in `router.rs` (queues, dispatch, timeouts) and `outcome.rs`
//! (answers, retries, fail-safes, the cache and the recording).

mod outcome;
mod router;

use super::backend::{Backend, Health, WorkKind};
use super::config::{BackendConfig, LlmConfig};
use super::metrics::LlmStats;
use super::types::{Embedding, LlmValue, Priority};
use bevy::prelude::Entity;
use crossbeam_channel::{Receiver, Sender, unbounded};
use router::Router;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A request as the router sees it.
#[derive(Debug, Clone)]
pub struct Submission {
    /// Id (unique per runtime).
    pub id: u64,
    /// The agent it is for.
    pub agent: Option<Entity>,
    /// Purpose label, for routes and metrics.
    pub purpose: String,
    /// The work (shared with the request the caller keeps).
    pub kind: std::sync::Arc<WorkKind>,
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
    /// A request of a client (0: the handle that started the runtime).
    Submit(Submission, u32),
    /// A step's or a frame's requests in one message: one wake of the router, not one each
    /// (a waking router takes the core from the simulation's thread).
    SubmitMany(Vec<Submission>, u32),
    Cancel(u64),
    /// A client's replies and counters (see [`LlmRuntime::client`]).
    Register(u32, Sink),
    /// A client gone: what it still had running is answered to no one.
    Forget(u32),
    Shutdown,
}

/// Where a client's replies go and what they are counted in.
#[derive(Clone)]
pub(super) struct Sink {
    pub(super) replies: Sender<Reply>,
    pub(super) stats: Arc<Mutex<LlmStats>>,
}

/// The router thread, stopped when the last handle on it goes.
struct RouterThread {
    to_router: Sender<ToRouter>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Drop for RouterThread {
    fn drop(&mut self) {
        let _ = self.to_router.send(ToRouter::Shutdown);
        if let Some(t) = self.thread.lock().unwrap().take() {
            let _ = t.join();
        }
    }
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
    /// Its endpoints, for a pool of servers (empty for other backends).
    pub endpoints: Vec<super::backend::EndpointStatus>,
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

/// The handle the game (and tools) hold: submit, cancel, drain replies. Several handles can
/// share one runtime ([`LlmRuntime::client`]): towns run side by side on one model, each with
/// its own replies and counters, their requests decoded in the same batches.
pub struct LlmRuntime {
    to_router: Sender<ToRouter>,
    replies: Receiver<Reply>,
    next_id: Arc<AtomicU64>,
    /// This handle's number (0: the one that started the runtime).
    client: u32,
    clients: Arc<AtomicU32>,
    /// Metrics per purpose (of this handle's requests).
    pub stats: Arc<Mutex<LlmStats>>,
    /// Health and queues.
    pub status: Arc<Mutex<RuntimeStatus>>,
    /// Model identity of the embeddings now made (it changes when a server turns out to
    /// pool per-token vectors, or to have no embeddings and the local embedder takes over).
    pub embedding_model: Arc<Mutex<String>>,
    thread: Arc<RouterThread>,
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
                .read(true)
                .append(true)
                .open(p)
                .map_err(|e| {
                    // Said where it is seen whatever logs: a run that records nothing must
                    // not look like one that does (headless runs check it before they start).
                    eprintln!(
                        "error: llm.record: {p}: cannot be written ({e}); nothing is recorded"
                    );
                    bevy::log::error!("cannot record to {p}: {e}")
                })
                .ok()
                .map(|mut f| {
                    // A recording killed while it wrote a line ends in the cut line: this run's
                    // answers begin on a line of their own (the cut one is skipped on replay).
                    if last_byte(&mut f).is_some_and(|b| b != b'\n') {
                        use std::io::Write;
                        let _ = f.write_all(b"\n");
                    }
                    f
                })
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
            joined: HashMap::new(),
            follower_of: HashMap::new(),
            recorder,
            sinks: HashMap::from([(
                0,
                Sink {
                    replies: reply_tx,
                    stats: stats.clone(),
                },
            )]),
            status: status.clone(),
            done_tx,
            seq: 0,
            latency: vec![VecDeque::new(); n],
        };
        let thread = std::thread::Builder::new()
            .name("llm-router".into())
            .spawn(move || router.run(from_game, done_rx))
            .expect("spawn the LLM router thread");
        Self {
            to_router: to_router.clone(),
            replies,
            next_id: Arc::new(AtomicU64::new(1)),
            client: 0,
            clients: Arc::new(AtomicU32::new(1)),
            stats,
            status,
            embedding_model,
            thread: Arc::new(RouterThread {
                to_router,
                thread: Mutex::new(Some(thread)),
            }),
        }
    }

    /// Another handle on the same runtime, with its own replies and counters: its requests
    /// share the backends, their batches and the answer cache with every other handle's.
    pub fn client(&self) -> Self {
        let client = self.clients.fetch_add(1, AtomicOrdering::Relaxed);
        let (tx, replies) = unbounded();
        let stats = Arc::new(Mutex::new(LlmStats::default()));
        let _ = self.to_router.send(ToRouter::Register(
            client,
            Sink {
                replies: tx,
                stats: stats.clone(),
            },
        ));
        Self {
            to_router: self.to_router.clone(),
            replies,
            next_id: self.next_id.clone(),
            client,
            clients: self.clients.clone(),
            stats,
            status: self.status.clone(),
            embedding_model: self.embedding_model.clone(),
            thread: self.thread.clone(),
        }
    }

    /// A fresh request id.
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, AtomicOrdering::Relaxed)
    }

    /// Queues a request; the reply arrives on [`Self::try_recv`].
    pub fn submit(&self, sub: Submission) {
        let _ = self.to_router.send(ToRouter::Submit(sub, self.client));
    }

    /// Queues several requests at once, in their order.
    pub fn submit_many(&self, subs: Vec<Submission>) {
        if !subs.is_empty() {
            let _ = self.to_router.send(ToRouter::SubmitMany(subs, self.client));
        }
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
        // The router itself stops when the last handle goes (see `RouterThread`).
        if self.client != 0 {
            let _ = self.to_router.send(ToRouter::Forget(self.client));
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
            let probe = super::config::seconds(all.probe_after_s);
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
        BackendConfig::Replay(c) => {
            Box::new(super::backend::recording::ReplayBackend::load(index, c))
        }
        BackendConfig::Bert(c) => Box::new(super::backend::bert::BertBackendHandle::start(
            index,
            c.clone(),
        )),
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

/// A valid value of a request's shape, used when the caller gave no fail-safe.
pub fn default_value(kind: &WorkKind) -> LlmValue {
    match kind {
        WorkKind::Embed { .. } => LlmValue::Embedding(Embedding {
            model: "unavailable".into(),
            vector: Vec::new().into(),
        }),
        WorkKind::Chat { shape, .. } => super::shape::fail_safe(shape),
    }
}

/// The last byte of a file opened to read and append (`None`: empty, or not a file one can
/// seek in).
fn last_byte(f: &mut std::fs::File) -> Option<u8> {
    use std::io::{Read, Seek, SeekFrom};
    f.seek(SeekFrom::End(-1)).ok()?;
    let mut b = [0u8];
    f.read_exact(&mut b).ok()?;
    Some(b[0])
}
