//! Any OpenAI-compatible server (llama-cpp-python's server, llama.cpp's llama-server, Ollama,
//! vLLM, OpenAI): chat completions whose output shape the server is asked to enforce in the
//! form it takes (negotiated per endpoint, `dialect.rs`), and embeddings, pooled or per token.
//! Requests are spread over the endpoints that are up; an endpoint that fails repeatedly rests
//! and is then probed again. A refusal of a request's form is not a failure of the server and
//! never counts toward resting it, nor does a refusal of one request (too long); a route the
//! server does not have (404/405 to every request: a wrong base URL) does. HTTPS through rustls (ring). The API key is read only from
//! the environment variable the config names and is never logged.
//!
//! This file holds the backend (endpoints, their health, spreading requests over them); what
//! an endpoint is known to do is in `talk.rs`, the HTTP client and its errors in `http.rs`, and
//! one chat or embedding exchange in `requests.rs`.

mod http;
mod requests;
mod talk;

pub use http::{HttpError, api_key, error_chain, http_client, install_crypto_provider, send};
pub use requests::{chat, embed};
pub use talk::{EmbedRoute, Embeddings, Talk, embedding_identity};

use super::{
    Backend, BackendError, EndpointStatus, ErrorKind, Health, Work, WorkDone, WorkKind, WorkOutcome,
};
use crate::llm::config::OpenAiConfig;
use crossbeam_channel::Sender;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an endpoint's last error is shown in its health line while it is up.
const RECENT_ERROR: Duration = Duration::from_secs(60);

struct Endpoint {
    url: String,
    in_flight: usize,
    failures: u32,
    down_until: Option<Instant>,
    probing: bool,
    /// The last error and when it came.
    last_error: Option<(String, Instant)>,
    talk: Arc<Mutex<Talk>>,
    /// Requests answered or failed.
    done: u64,
    affinity_hits: u64,
    affinity_misses: u64,
    /// Recent seconds per chat answer (exponential moving average), once one was answered.
    latency: Option<f32>,
    /// Recent seconds per generated token (eight counted for the prompt): what `slow_factor`
    /// compares, as it does not depend on how long the answers were.
    pace: Option<f32>,
}

/// A resident's score for an endpoint (rendezvous hashing): the resident's own endpoint is the
/// one scoring highest among those up, so when one rests only its residents move.
pub fn rendezvous(key: u64, endpoint: usize) -> u64 {
    crate::sim::hash::mix64(key ^ (endpoint as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// An OpenAI-compatible backend.
pub struct OpenAiBackend {
    index: usize,
    cfg: OpenAiConfig,
    endpoints: Vec<Endpoint>,
    client: Result<reqwest::Client, String>,
    runtime: tokio::runtime::Runtime,
    api_key: Option<String>,
    key_error: Option<String>,
    turn: usize,
    down_after: u32,
    probe_after: Duration,
    /// When each request in flight was sent (for the endpoints' latency).
    sent: HashMap<u64, Instant>,
}

impl OpenAiBackend {
    /// A backend for the configured endpoints: an endpoint rests `probe_after` once it has
    /// failed `down_after` times in a row.
    pub fn with_health(
        index: usize,
        cfg: OpenAiConfig,
        down_after: u32,
        probe_after: Duration,
    ) -> Self {
        let (api_key, key_error) = api_key(&cfg);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("llm-http")
            .enable_all()
            .build()
            .expect("start the HTTP runtime");
        let ca_file = cfg
            .ca_file
            .as_deref()
            .map(crate::llm::model_files::resolve_model);
        let client = http_client(Duration::from_secs(5), ca_file.as_deref());
        let dialect = cfg.effective_dialect();
        let endpoints = cfg
            .endpoints
            .iter()
            .map(|u| Endpoint {
                url: u.trim_end_matches('/').to_string(),
                in_flight: 0,
                failures: 0,
                down_until: None,
                probing: false,
                last_error: None,
                talk: Arc::new(Mutex::new(Talk::new(dialect))),
                done: 0,
                affinity_hits: 0,
                affinity_misses: 0,
                latency: None,
                pace: None,
            })
            .collect();
        Self {
            index,
            cfg,
            endpoints,
            client,
            runtime,
            api_key,
            key_error,
            turn: 0,
            down_after: down_after.max(1),
            probe_after,
            sent: HashMap::new(),
        }
    }

    /// What each endpoint is known to do (URL and a copy of its state).
    pub fn talks(&self) -> Vec<(String, Talk)> {
        self.endpoints
            .iter()
            .map(|e| (e.url.clone(), e.talk.lock().unwrap().clone()))
            .collect()
    }

    fn usable(&self, e: &Endpoint, now: Instant) -> bool {
        match e.down_until {
            None => true,
            // Resting; once the rest is over one probe request may go through.
            Some(t) => now >= t && !e.probing,
        }
    }

    /// Most requests endpoint `i` is given now: `concurrency`, or a quarter of it while its
    /// recent seconds per generated token exceed `slow_factor` times the fastest endpoint's.
    fn limit(&self, i: usize) -> usize {
        let full = (self.cfg.concurrency as usize).max(1);
        let (Some(mine), true) = (self.endpoints[i].pace, self.cfg.slow_factor > 0.0) else {
            return full;
        };
        let fastest = self
            .endpoints
            .iter()
            .filter(|e| e.down_until.is_none())
            .filter_map(|e| e.pace)
            .fold(f32::INFINITY, f32::min);
        if fastest.is_finite() && mine > self.cfg.slow_factor * fastest.max(0.001) {
            (full / 4).max(1)
        } else {
            full
        }
    }

    /// The endpoint for a request: the resident's own one while it has room (with
    /// `affinity`), else the one with the fewest requests outstanding for its limit, among
    /// those up (and making embeddings, for an embedding).
    fn pick(&mut self, embed: bool, affinity: Option<u64>) -> Option<usize> {
        let now = Instant::now();
        let n = self.endpoints.len();
        let fits = |s: &Self, i: usize| {
            let e = &s.endpoints[i];
            s.usable(e, now)
                && e.in_flight < s.limit(i)
                && !(embed && matches!(e.talk.lock().unwrap().embeddings, Embeddings::No(_)))
        };
        let own = affinity
            .filter(|_| self.cfg.affinity && n > 1)
            .and_then(|key| {
                (0..n)
                    .filter(|&i| {
                        let e = &self.endpoints[i];
                        self.usable(e, now) || e.probing
                    })
                    .max_by_key(|&i| rendezvous(key, i))
            });
        let chosen = match own {
            Some(i) if fits(self, i) => {
                self.endpoints[i].affinity_hits += 1;
                Some(i)
            }
            _ => {
                let mut best: Option<usize> = None;
                for k in 0..n {
                    let i = (self.turn + k) % n;
                    if !fits(self, i) {
                        continue;
                    }
                    // Fewest outstanding for the room it has (a slow endpoint's smaller
                    // limit counts), ties to the next in turn.
                    let load = |j: usize| self.endpoints[j].in_flight as f64 / self.limit(j) as f64;
                    if best.is_none_or(|b| load(b) > load(i)) {
                        best = Some(i);
                    }
                }
                if let (Some(o), Some(_)) = (own, best) {
                    self.endpoints[o].affinity_misses += 1;
                }
                best
            }
        };
        if let Some(i) = chosen {
            self.turn = (i + 1) % n;
            if self.endpoints[i].down_until.is_some() {
                self.endpoints[i].probing = true;
            }
        }
        chosen
    }

    /// Why no endpoint makes embeddings, when none does.
    fn no_embeddings(&self) -> Option<String> {
        let mut why = Vec::new();
        for e in &self.endpoints {
            match &e.talk.lock().unwrap().embeddings {
                Embeddings::No(w) => why.push(format!("{}: {w}", e.url)),
                _ => return None,
            }
        }
        Some(why.join("; "))
    }
}

impl Backend for OpenAiBackend {
    fn name(&self) -> &str {
        &self.cfg.name
    }

    fn model_id(&self) -> String {
        format!("openai:{}", self.cfg.model)
    }

    fn embedding_model_id(&self) -> String {
        let model = self.cfg.embedding_model.as_ref().unwrap_or(&self.cfg.model);
        let per_token = self.endpoints.iter().any(|e| {
            matches!(
                e.talk.lock().unwrap().embeddings,
                Embeddings::Yes {
                    per_token: true,
                    ..
                }
            )
        });
        embedding_identity(model, per_token)
    }

    fn capacity(&self) -> usize {
        // The room of the endpoints that take work now, so the router keeps the rest of the
        // queue (in priority order) rather than handing work to a pool that has no room.
        let now = Instant::now();
        (0..self.endpoints.len())
            .filter(|&i| self.usable(&self.endpoints[i], now))
            .map(|i| self.limit(i))
            .sum::<usize>()
            .max(1)
    }

    fn endpoints(&self) -> Vec<EndpointStatus> {
        (0..self.endpoints.len())
            .map(|i| {
                let e = &self.endpoints[i];
                EndpointStatus {
                    url: e.url.clone(),
                    up: e.down_until.is_none(),
                    in_flight: e.in_flight,
                    limit: if e.down_until.is_none() {
                        self.limit(i)
                    } else {
                        0
                    },
                    done: e.done,
                    affinity_hits: e.affinity_hits,
                    affinity_misses: e.affinity_misses,
                    latency_s: e.latency.unwrap_or(0.0),
                }
            })
            .collect()
    }

    fn available(&self) -> bool {
        let now = Instant::now();
        self.key_error.is_none()
            && self.client.is_ok()
            && self.endpoints.iter().any(|e| self.usable(e, now))
    }

    fn start(&mut self, work: Work, done: Sender<WorkDone>) {
        let embed = matches!(work.kind, WorkKind::Embed { .. });
        let refuse = |done: &Sender<WorkDone>, e: BackendError, index: usize| {
            let _ = done.send(WorkDone {
                id: work.id,
                backend: index,
                endpoint: None,
                outcome: WorkOutcome::Failed(e),
            });
        };
        if embed && let Some(why) = self.no_embeddings() {
            return refuse(
                &done,
                BackendError::new(ErrorKind::Unsupported, why),
                self.index,
            );
        }
        let client = match &self.client {
            Ok(c) => c.clone(),
            Err(e) => {
                return refuse(
                    &done,
                    BackendError::new(ErrorKind::Fatal, e.clone()),
                    self.index,
                );
            }
        };
        let Some(ep) = self.pick(embed, work.affinity) else {
            return refuse(
                &done,
                BackendError::new(ErrorKind::Down, "no endpoint is up"),
                self.index,
            );
        };
        self.endpoints[ep].in_flight += 1;
        self.sent.insert(work.id, Instant::now());
        let base = self.endpoints[ep].url.clone();
        let talk = self.endpoints[ep].talk.clone();
        let key = self.api_key.clone();
        let cfg = self.cfg.clone();
        let index = self.index;
        self.runtime.spawn(async move {
            let left = work.deadline.saturating_duration_since(Instant::now());
            let job = async {
                match &work.kind {
                    WorkKind::Chat {
                        messages,
                        shape: s,
                        sampling,
                    } => {
                        chat(
                            &client,
                            &base,
                            key.as_deref(),
                            &cfg.model,
                            &talk,
                            messages,
                            s,
                            sampling,
                        )
                        .await
                    }
                    WorkKind::Embed { text } => {
                        let model = cfg.embedding_model.as_ref().unwrap_or(&cfg.model);
                        self::embed(&client, &base, key.as_deref(), model, &talk, text).await
                    }
                }
            };
            let outcome = match tokio::time::timeout(left, job).await {
                Ok(Ok(o)) => o,
                Ok(Err(e)) => WorkOutcome::Failed(e),
                Err(_) => WorkOutcome::Failed(BackendError::new(
                    ErrorKind::Timeout,
                    format!("{base}: no answer in {:.1} s", left.as_secs_f32()),
                )),
            };
            let _ = done.send(WorkDone {
                id: work.id,
                backend: index,
                endpoint: Some(ep),
                outcome,
            });
        });
    }

    fn observe(&mut self, d: &WorkDone) {
        let Some(i) = d.endpoint else { return };
        let Some(e) = self.endpoints.get_mut(i) else {
            return;
        };
        e.in_flight = e.in_flight.saturating_sub(1);
        e.probing = false;
        e.done += 1;
        // Chat answers only (embeddings take a fraction of the time), per generated token
        // with eight tokens' worth for the prompt, so that long and short answers compare.
        if let Some(sent) = self.sent.remove(&d.id)
            && let WorkOutcome::Text {
                gen_tokens, text, ..
            } = &d.outcome
        {
            let secs = sent.elapsed().as_secs_f32();
            let tokens = if *gen_tokens > 0 {
                *gen_tokens
            } else {
                (text.len() / 4) as u32
            };
            let pace = secs / (tokens as f32 + 8.0);
            e.latency = Some(e.latency.map_or(secs, |l| 0.9 * l + 0.1 * secs));
            e.pace = Some(e.pace.map_or(pace, |l| 0.9 * l + 0.1 * pace));
        }
        match &d.outcome {
            // A refused request or a missing feature is no sign the server is down.
            WorkOutcome::Failed(err)
                if matches!(err.kind, ErrorKind::Fatal | ErrorKind::Unsupported) =>
            {
                e.last_error = Some((err.message.clone(), Instant::now()));
            }
            WorkOutcome::Failed(err) => {
                e.failures += 1;
                e.last_error = Some((err.message.clone(), Instant::now()));
                if e.failures >= self.down_after {
                    e.down_until = Some(Instant::now() + self.probe_after);
                }
            }
            _ => {
                e.failures = 0;
                e.down_until = None;
            }
        }
    }

    fn health(&self) -> (Health, String) {
        if let Some(k) = &self.key_error {
            return (Health::Down, k.clone());
        }
        if let Err(e) = &self.client {
            return (Health::Down, format!("fatal: {e}"));
        }
        let up = self
            .endpoints
            .iter()
            .filter(|e| e.down_until.is_none())
            .count();
        let n = self.endpoints.len();
        let now = Instant::now();
        let talk: Vec<String> = self
            .endpoints
            .iter()
            .map(|e| {
                let t = e.talk.lock().unwrap();
                // The last error is shown while the endpoint rests, and for a minute after
                // it came while it is up: requests can fail one by one (too long, refused)
                // without the endpoint ever resting.
                let error = match &e.last_error {
                    Some((m, at))
                        if e.down_until.is_some()
                            || now.saturating_duration_since(*at) < RECENT_ERROR =>
                    {
                        format!(
                            "; last error {:.0} s ago: {m}",
                            now.saturating_duration_since(*at).as_secs_f64()
                        )
                    }
                    _ => String::new(),
                };
                let what = format!(
                    "dialect {}; embeddings {}{error}",
                    t.negotiation.describe(),
                    t.embeddings.describe()
                );
                if n == 1 {
                    what
                } else {
                    format!("{}: {what}", e.url)
                }
            })
            .collect();
        let mut detail = if up == n {
            format!("{n} endpoint(s) up; {}", talk.join(" | "))
        } else {
            format!("{up}/{n} endpoints up; {}", talk.join(" | "))
        };
        if detail.len() > 600 {
            detail = detail.chars().take(600).collect();
        }
        if up > 0 || self.available() {
            (Health::Ok, detail)
        } else {
            (Health::Down, detail)
        }
    }

    fn note(&self) -> Option<String> {
        let mut labels: Vec<&'static str> = self
            .endpoints
            .iter()
            .map(|e| e.talk.lock().unwrap().negotiation.current().label())
            .collect();
        labels.dedup();
        Some(labels.join("/"))
    }
}
