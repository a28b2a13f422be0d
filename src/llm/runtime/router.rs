//! The router thread's loop: it takes submissions and cancellations, queues requests by
//! priority on their backends, dispatches them as the backends have room, expires hung work,
//! releases retries whose back-off is over, and publishes the status.

use super::{BackendStatus, Reply, ReplySource, RuntimeStatus, Sink, Submission, ToRouter};
use crate::llm::backend::{
    Backend, BackendError, ErrorKind, Health, Work, WorkDone, WorkKind, work_key,
};
use crate::llm::config::LlmConfig;
use crate::llm::shape;
use crate::llm::types::{LlmValue, Priority};
use crossbeam_channel::{Receiver, Sender, select};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A handle's replies and counters (those of the runtime's own handle, 0, when that handle
/// is gone).
pub(super) fn sink(sinks: &HashMap<u32, Sink>, client: u32) -> &Sink {
    sinks.get(&client).unwrap_or_else(|| &sinks[&0])
}

/// A place in a backend's queue: higher priority first, then first come first served.
#[derive(PartialEq, Eq)]
pub(super) struct QueueEntry {
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

/// A request the router holds until it is answered, fails safe or is cancelled.
pub(super) struct InFlight {
    pub(super) sub: Submission,
    /// The handle that asked (see [`super::LlmRuntime::client`]).
    pub(super) client: u32,
    pub(super) backend: usize,
    pub(super) attempts: u32,
    pub(super) submitted: Instant,
    pub(super) started: Option<Instant>,
    pub(super) cancelled: Arc<AtomicBool>,
    pub(super) key: String,
    pub(super) prompt_tokens: u32,
    /// Why the last attempt failed, which decides how the next one differs.
    pub(super) retry: Option<Retry>,
    /// The cache key identical requests wait on it by (see [`Joined`]); none when it is not
    /// cacheable.
    pub(super) joined_as: Option<String>,
}

/// The requests waiting on one identical request on its way (`leader`), which the cache would
/// have answered had that answer come: they get it when it comes (counted as cache hits), so
/// one answer is generated once however many ask for it at the same time, and a replay (whose
/// answers come at once, the rest from the cache) gives each the answer the recorded run gave.
pub(super) struct Joined {
    pub(super) leader: u64,
    pub(super) followers: Vec<(Submission, u32)>,
}

/// Why a request is tried again; each asks differently, or not at all (a retry that changed
/// nothing would give the same answer).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Retry {
    /// The answer went round in a loop (`why`: how): sampled, in the same room, the loop said.
    Loop(String),
    /// The answer did not fit its shape (`why`: what was wrong with it): sampled, in twice the
    /// room (most such answers were cut off at the token budget), what was wrong said.
    Shape(String),
    /// The backend failed (a timeout, an HTTP error, down): the same request again, since no
    /// answer of the model's was seen.
    Backend,
}

impl Retry {
    /// The next attempt's request: `kind` as asked first, changed for the cause.
    pub(super) fn ask_again(&self, kind: &mut WorkKind, attempt: u32) {
        let WorkKind::Chat {
            messages, sampling, ..
        } = kind
        else {
            return;
        };
        let said = match self {
            Retry::Backend => return,
            Retry::Loop(why) => format!(
                "(An answer before this one went round in a loop ({why}) and was stopped: answer without repeating yourself.)"
            ),
            Retry::Shape(why) => {
                sampling.max_tokens = sampling.max_tokens.saturating_mul(2);
                // What was wrong may quote the answer: a line's worth is said, no more.
                let why: String = why.chars().take(160).collect();
                format!("(An answer before this one could not be used: {why}.)")
            }
        };
        sampling.temperature = sampling.temperature.max(0.7);
        sampling.seed = sampling.seed.wrapping_add(attempt);
        if let Some(last) = messages.iter_mut().rev().find(|m| m.role == "user") {
            last.content.push_str("\n\n");
            last.content.push_str(&said);
        }
    }
}

impl InFlight {
    /// A request just taken, for `backend`, not yet tried.
    pub(super) fn new(sub: Submission, client: u32, backend: usize, key: String) -> Self {
        Self {
            sub,
            client,
            backend,
            attempts: 0,
            submitted: Instant::now(),
            started: None,
            cancelled: Arc::default(),
            key,
            prompt_tokens: 0,
            retry: None,
            joined_as: None,
        }
    }
}

/// The router thread's state.
pub(super) struct Router {
    pub(super) config: LlmConfig,
    pub(super) backends: Vec<Box<dyn Backend>>,
    pub(super) routes: HashMap<String, usize>,
    pub(super) embed_backend: usize,
    /// The local embedder that takes over when the embedding backend has no embeddings.
    pub(super) embed_fallback: Option<usize>,
    /// Whether the embedding backend's lack of embeddings was reported.
    pub(super) embedder_told: bool,
    pub(super) embedding_model: Arc<Mutex<String>>,
    pub(super) queues: Vec<BinaryHeap<QueueEntry>>,
    pub(super) jobs: HashMap<u64, InFlight>,
    pub(super) running: Vec<HashSet<u64>>,
    pub(super) delayed: Vec<(Instant, u64)>,
    pub(super) cache: HashMap<String, (LlmValue, String)>,
    pub(super) cache_order: VecDeque<String>,
    /// Requests the cache would answer once an identical one still on its way is answered:
    /// they wait for that answer (see [`Joined`]), by the cache key.
    pub(super) joined: HashMap<String, Joined>,
    /// The cache key each waiting request waits under (to drop it when it is cancelled).
    pub(super) follower_of: HashMap<u64, String>,
    pub(super) recorder: Option<std::fs::File>,
    /// Each handle's replies and counters, by its number (0 is always there).
    pub(super) sinks: HashMap<u32, Sink>,
    pub(super) status: Arc<Mutex<RuntimeStatus>>,
    pub(super) done_tx: Sender<WorkDone>,
    pub(super) seq: u64,
    pub(super) latency: Vec<VecDeque<Duration>>,
}

impl Router {
    pub(super) fn run(mut self, from_game: Receiver<ToRouter>, done_rx: Receiver<WorkDone>) {
        self.publish_status();
        loop {
            let wait = self.next_wakeup();
            select! {
                recv(from_game) -> msg => match msg {
                    Ok(ToRouter::Shutdown) | Err(_) => break,
                    Ok(msg) => self.take(msg),
                },
                recv(done_rx) -> d => if let Ok(d) = d { self.finish(d) },
                default(wait) => {}
            }
            // Take everything else that is ready before dispatching, so a burst of submissions
            // is ordered by priority rather than by arrival.
            while let Ok(msg) = from_game.try_recv() {
                if matches!(msg, ToRouter::Shutdown) {
                    return;
                }
                self.take(msg);
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

    fn take(&mut self, msg: ToRouter) {
        match msg {
            ToRouter::Submit(s, c) => self.accept(s, c),
            ToRouter::SubmitMany(v, c) => v.into_iter().for_each(|s| self.accept(s, c)),
            ToRouter::Cancel(id) => self.cancel(id),
            ToRouter::Register(c, sink) => {
                self.sinks.insert(c, sink);
            }
            ToRouter::Forget(c) => {
                self.sinks.remove(&c);
                // Its requests that wait on another's first (a cancelled one of its own would
                // hand them on), then its own.
                let waiting: Vec<u64> = self
                    .joined
                    .values()
                    .flat_map(|j| j.followers.iter())
                    .filter(|(_, client)| *client == c)
                    .map(|(sub, _)| sub.id)
                    .collect();
                waiting.into_iter().for_each(|id| self.cancel(id));
                let gone: Vec<u64> = self
                    .jobs
                    .iter()
                    .filter(|(_, j)| j.client == c)
                    .map(|(id, _)| *id)
                    .collect();
                gone.into_iter().for_each(|id| self.cancel(id));
            }
            ToRouter::Shutdown => {}
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

    fn accept(&mut self, sub: Submission, client: u32) {
        let backend = match &*sub.kind {
            WorkKind::Embed { .. } => self.embed_backend,
            WorkKind::Chat { .. } => self.routes.get(&sub.purpose).copied().unwrap_or(0),
        };
        let key = work_key(&sub.kind);
        let sink = sink(&self.sinks, client);
        sink.stats.lock().unwrap().purpose(&sub.purpose).calls += 1;
        // Invalid shapes (an empty choice list) can never be answered: fail-safe at once.
        if let WorkKind::Chat { shape: s, .. } = &*sub.kind
            && let Err(e) = shape::grammar(s)
        {
            let job = InFlight::new(sub, client, backend, key);
            self.fallback(job, format!("bad request: {e}"));
            return;
        }
        let ck = (self.config.cache && cacheable(&sub.kind)).then(|| self.cache_key(backend, &key));
        if let Some(ck) = &ck
            && let Some((value, text)) = self.cache.get(ck).cloned()
        {
            sink.stats.lock().unwrap().purpose(&sub.purpose).cache_hits += 1;
            let _ = sink.replies.send(Reply {
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
        self.start_job(sub, client, backend, key, ck);
    }

    /// Queues a request the cache did not answer, or joins it, by its cache key `ck` (none when
    /// it is not cached), to an identical one on its way.
    fn start_job(
        &mut self,
        sub: Submission,
        client: u32,
        backend: usize,
        key: String,
        ck: Option<String>,
    ) {
        let mut joined_as = None;
        if let Some(ck) = ck {
            if let Some(j) = self.joined.get_mut(&ck)
                && self.jobs.contains_key(&j.leader)
            {
                self.follower_of.insert(sub.id, ck);
                j.followers.push((sub, client));
                return;
            }
            self.joined.insert(
                ck.clone(),
                Joined {
                    leader: sub.id,
                    followers: Vec::new(),
                },
            );
            joined_as = Some(ck);
        }
        let id = sub.id;
        let priority = sub.priority;
        let mut job = InFlight::new(sub, client, backend, key);
        job.joined_as = joined_as;
        self.jobs.insert(id, job);
        self.enqueue(backend, id, priority);
    }

    /// The requests that waited on `job` (answered, failed safe or cancelled), taken out.
    pub(super) fn take_followers(&mut self, job: &InFlight) -> Vec<(Submission, u32)> {
        let Some(ck) = &job.joined_as else {
            return Vec::new();
        };
        match self.joined.get(ck) {
            Some(j) if j.leader == job.sub.id => {
                let followers = self.joined.remove(ck).map(|j| j.followers);
                let followers = followers.unwrap_or_default();
                for (sub, _) in &followers {
                    self.follower_of.remove(&sub.id);
                }
                followers
            }
            _ => Vec::new(),
        }
    }

    pub(super) fn enqueue(&mut self, backend: usize, id: u64, priority: Priority) {
        self.seq += 1;
        self.queues[backend].push(QueueEntry {
            priority,
            seq: self.seq,
            id,
        });
    }

    pub(super) fn cache_key(&self, backend: usize, key: &str) -> String {
        format!("{}\u{1}{key}", self.backends[backend].model_id())
    }

    fn cancel(&mut self, id: u64) {
        if let Some(job) = self.jobs.remove(&id) {
            job.cancelled.store(true, AtomicOrdering::Relaxed);
            self.running[job.backend].remove(&id);
            // Those that waited on it are asked for themselves, the first leading the others.
            // (Identical requests: the leader's keys are theirs.)
            for (sub, client) in self.take_followers(&job) {
                let (key, ck) = (job.key.clone(), job.joined_as.clone());
                self.start_job(sub, client, job.backend, key, ck);
            }
        } else if let Some(ck) = self.follower_of.remove(&id)
            && let Some(j) = self.joined.get_mut(&ck)
        {
            j.followers.retain(|(s, _)| s.id != id);
        }
        self.delayed.retain(|(_, d)| *d != id);
    }

    fn dispatch(&mut self) {
        let now = Instant::now();
        let timeout = crate::llm::config::seconds(self.config.timeout_s);
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
                let mut kind = (*job.sub.kind).clone();
                if job.attempts > 1
                    && let Some(retry) = &job.retry
                {
                    retry.ask_again(&mut kind, job.attempts);
                }
                let work = Work {
                    id,
                    purpose: job.sub.purpose.clone(),
                    kind,
                    deadline: now + timeout,
                    cancelled: job.cancelled.clone(),
                    affinity: job.sub.agent.map(|a| a.to_bits()),
                };
                self.running[b].insert(id);
                self.backends[b].start(work, self.done_tx.clone());
            }
        }
    }

    /// A backend that never answers must not hold a request forever.
    fn expire_hung(&mut self) {
        let grace = crate::llm::config::seconds(self.config.timeout_s) + Duration::from_secs(2);
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

    fn publish_status(&mut self) {
        let slow = crate::llm::config::seconds(self.config.slow_after_s);
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
                    endpoints: b.endpoints(),
                }
            })
            .collect();
        self.status.lock().unwrap().backends = backends;
    }
}

pub(super) fn cacheable(kind: &WorkKind) -> bool {
    match kind {
        WorkKind::Chat { sampling, .. } => sampling.deterministic(),
        WorkKind::Embed { .. } => true,
    }
}
