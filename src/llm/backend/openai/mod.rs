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

use super::{Backend, BackendError, ErrorKind, Health, Work, WorkDone, WorkKind, WorkOutcome};
use crate::llm::config::OpenAiConfig;
use crossbeam_channel::Sender;
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
        let client = http_client(Duration::from_secs(5));
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

    fn pick(&mut self, embed: bool) -> Option<usize> {
        let now = Instant::now();
        let n = self.endpoints.len();
        let mut best: Option<usize> = None;
        for k in 0..n {
            let i = (self.turn + k) % n;
            let e = &self.endpoints[i];
            if !self.usable(e, now) || e.in_flight >= self.cfg.concurrency as usize {
                continue;
            }
            if embed && matches!(e.talk.lock().unwrap().embeddings, Embeddings::No(_)) {
                continue;
            }
            if best.is_none_or(|b| self.endpoints[b].in_flight > e.in_flight) {
                best = Some(i);
            }
        }
        if let Some(i) = best {
            self.turn = (i + 1) % n;
            if self.endpoints[i].down_until.is_some() {
                self.endpoints[i].probing = true;
            }
        }
        best
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
        (self.cfg.concurrency as usize * self.endpoints.len()).max(1)
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
        let Some(ep) = self.pick(embed) else {
            return refuse(
                &done,
                BackendError::new(ErrorKind::Down, "no endpoint is up"),
                self.index,
            );
        };
        self.endpoints[ep].in_flight += 1;
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
