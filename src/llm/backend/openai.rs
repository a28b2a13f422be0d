//! Any OpenAI-compatible server (llama-cpp-python's server, llama.cpp's llama-server, Ollama,
//! vLLM, OpenAI): chat completions whose output shape the server is asked to enforce in the
//! form it takes (negotiated per endpoint, `dialect.rs`), and embeddings, pooled or per token.
//! Requests are spread over the endpoints that are up; an endpoint that fails repeatedly rests
//! and is then probed again. A refusal of a request's form is not a failure of the server and
//! never counts toward resting it, nor does a refusal of one request (too long); a route the
//! server does not have (404/405 to every request: a wrong base URL) does. HTTPS through rustls (ring). The API key is read only from
//! the environment variable the config names and is never logged.

use super::dialect::{self, ChatRoute, Negotiation, Verdict};
use super::{Backend, BackendError, ErrorKind, Health, Work, WorkDone, WorkKind, WorkOutcome};
use crate::llm::config::{Dialect, OpenAiConfig};
use crate::llm::shape;
use crate::llm::types::{ChatMessage, OutputShape, Sampling};
use crossbeam_channel::Sender;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What an endpoint is known to do: shared by the backend and its requests in flight.
#[derive(Debug, Clone)]
pub struct Talk {
    /// How shaped requests are written.
    pub negotiation: Negotiation,
    /// Whether and how it makes embeddings.
    pub embeddings: Embeddings,
}

impl Talk {
    /// Before first contact.
    pub fn new(dialect: Dialect) -> Self {
        Self {
            negotiation: Negotiation::new(dialect),
            embeddings: Embeddings::Unknown,
        }
    }
}

/// An endpoint's embeddings.
#[derive(Debug, Clone, PartialEq)]
pub enum Embeddings {
    /// Not asked yet.
    Unknown,
    /// It makes them.
    Yes {
        /// Vector size.
        dim: usize,
        /// One vector per token came back, mean-pooled here.
        per_token: bool,
        /// Where they come from.
        route: EmbedRoute,
    },
    /// It makes none: the server's words.
    No(String),
}

/// The route embeddings are asked on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedRoute {
    /// `{base}/embeddings` (OpenAI's).
    OpenAi,
    /// llama-server's own `{root}/embedding` (per-token vectors when the model has no pooling).
    LlamaServer,
}

impl Embeddings {
    /// In words.
    pub fn describe(&self) -> String {
        match self {
            Embeddings::Unknown => "not asked yet".into(),
            Embeddings::Yes {
                dim,
                per_token,
                route,
            } => format!(
                "{dim}d{}{}",
                if *per_token {
                    " (token vectors, mean-pooled here)"
                } else {
                    ""
                },
                if *route == EmbedRoute::LlamaServer {
                    " from /embedding"
                } else {
                    ""
                }
            ),
            Embeddings::No(why) => format!("no ({why})"),
        }
    }
}

/// The model identity recorded with an endpoint's vectors: per-token vectors pooled here are
/// not the same vectors as a pooling model's, so the pooling is part of the name.
pub fn embedding_identity(model: &str, per_token: bool) -> String {
    if per_token {
        format!("openai:{model} (mean of token vectors)")
    } else {
        format!("openai:{model}")
    }
}

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

/// Installs rustls' ring crypto provider for the process (once; a provider already installed,
/// by us or anyone, is kept).
pub fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Err means another thread installed one meanwhile: that one serves as well.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

/// The HTTP client: HTTP and HTTPS (rustls with ring, the system's root certificates). On a
/// machine with no root certificates at all it still builds, for plain `http://` (an `https://`
/// server is then refused as unknown), and says so once.
pub fn http_client(connect_timeout: Duration) -> Result<reqwest::Client, String> {
    install_crypto_provider();
    let builder = || reqwest::Client::builder().connect_timeout(connect_timeout);
    match builder().build() {
        Ok(c) => Ok(c),
        Err(e) => {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                eprintln!(
                    "llm: no root certificates on this system ({}): https:// servers cannot be verified; install ca-certificates (./scripts/setup.sh does) or set SSL_CERT_FILE. http:// servers work.",
                    error_chain(&e)
                )
            });
            builder()
                .tls_certs_only(Vec::new())
                .build()
                .map_err(|e| format!("cannot build the HTTP client: {e}"))
        }
    }
}

/// Reads the API key from the variable the config names: the key, or why there is none.
pub fn api_key(cfg: &OpenAiConfig) -> (Option<String>, Option<String>) {
    match &cfg.api_key_env {
        None => (None, None),
        Some(var) => match std::env::var(var) {
            Ok(k) if !k.trim().is_empty() => (Some(k.trim().to_string()), None),
            _ => (
                None,
                Some(format!("fatal: the API key variable ${var} is not set")),
            ),
        },
    }
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

/// An HTTP exchange that did not give JSON.
#[derive(Debug)]
pub enum HttpError {
    /// No answer: refused, reset, timed out.
    Transport(String),
    /// An error status and the body.
    Status(u16, String),
    /// A 2xx whose body is not JSON.
    NotJson(String),
}

/// Posts (or, with no body, gets) and reads JSON.
pub async fn send(
    client: &reqwest::Client,
    url: &str,
    key: Option<&str>,
    body: Option<&Value>,
) -> Result<Value, HttpError> {
    let mut req = match body {
        Some(b) => client.post(url).json(b),
        None => client.get(url),
    };
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp = req
        .send()
        .await
        .map_err(|e| HttpError::Transport(format!("{url}: {}", error_chain(&e))))?;
    let status = resp.status();
    let bytes = resp
        .bytes()
        .await
        .map_err(|e| HttpError::Transport(format!("{url}: {}", error_chain(&e))))?;
    if !status.is_success() {
        return Err(HttpError::Status(
            status.as_u16(),
            String::from_utf8_lossy(&bytes).to_string(),
        ));
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| HttpError::NotJson(format!("{url}: answer is not JSON: {e}")))
}

/// An error with its causes (reqwest's own text hides the TLS or connection reason).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = c.source();
    }
    s
}

fn status_message(url: &str, status: u16, body: &str) -> String {
    let hint = if status == 401 {
        " (check the API key variable named in the config)"
    } else {
        ""
    };
    format!("{url}: HTTP {status}{hint}: {}", dialect::short(body))
}

fn transport_error(e: HttpError) -> BackendError {
    match e {
        HttpError::Transport(m) => BackendError::new(ErrorKind::Http, m),
        HttpError::NotJson(m) => BackendError::new(ErrorKind::Malformed, m),
        HttpError::Status(s, b) => {
            BackendError::new(ErrorKind::Http, format!("HTTP {s}: {}", dialect::short(&b)))
        }
    }
}

/// One chat request, written in the endpoint's dialect; a rejection of the form moves the
/// endpoint to its next dialect and the request is sent again at once. An answer that does not
/// match its shape comes back as text all the same (the router validates and retries) and counts
/// as evidence that the server ignored the form.
#[allow(clippy::too_many_arguments)]
pub async fn chat(
    client: &reqwest::Client,
    base: &str,
    key: Option<&str>,
    model: &str,
    talk: &Mutex<Talk>,
    messages: &[ChatMessage],
    shape_: &OutputShape,
    sampling: &Sampling,
) -> Result<WorkOutcome, BackendError> {
    let shaped = !matches!(shape_, OutputShape::Text);
    // Each rejection drops a form (or strict mode once), so this ends; the bound is a guard.
    for _ in 0..=Dialect::ORDER.len() + 1 {
        let (current, strict) = {
            let mut t = talk.lock().unwrap();
            t.negotiation.retry_due(Instant::now());
            (t.negotiation.current(), t.negotiation.strict)
        };
        let d = shaped.then_some(current);
        let req = dialect::chat_request(d, strict, model, messages, shape_, sampling)
            .map_err(|e| BackendError::new(ErrorKind::Fatal, e))?;
        let url = match req.route {
            ChatRoute::OpenAi => format!("{base}/chat/completions"),
            ChatRoute::OllamaNative => format!("{}/api/chat", dialect::root_of(base)),
        };
        match send(client, &url, key, Some(&req.body)).await {
            Ok(v) => {
                let ans = dialect::read_answer(&req, shape_, &v)
                    .map_err(|e| BackendError::new(ErrorKind::Malformed, format!("{url}: {e}")))?;
                if let Some(d) = d {
                    let valid = shape::parse(shape_, &ans.text).is_ok();
                    talk.lock()
                        .unwrap()
                        .negotiation
                        .answered(d, valid, ans.cut_off);
                }
                return Ok(WorkOutcome::Text {
                    text: ans.text,
                    prompt_tokens: ans.prompt_tokens,
                    cached_tokens: 0,
                    gen_tokens: ans.gen_tokens,
                });
            }
            Err(HttpError::Status(status, body)) => {
                let msg = status_message(&url, status, &body);
                // A route the server does not have (404/405 on every request: a wrong base
                // URL, or no such model) fails every request alike, so it counts toward
                // resting the endpoint; other refusals of one request (too long) do not.
                let refused = if matches!(status, 404 | 405) {
                    ErrorKind::Http
                } else {
                    ErrorKind::Fatal
                };
                match dialect::classify(status, &body, d) {
                    Verdict::FormRejected => {
                        let d = d.expect("a form was sent");
                        if talk.lock().unwrap().negotiation.reject(d, &body) {
                            continue;
                        }
                        let what = if d == Dialect::PromptOnly {
                            "even without a shape constraint".to_string()
                        } else {
                            format!("in the pinned dialect {}", d.label())
                        };
                        return Err(BackendError::new(
                            refused,
                            format!("{msg} (refused {what})"),
                        ));
                    }
                    Verdict::RequestRefused => return Err(BackendError::new(refused, msg)),
                    Verdict::ServerError => return Err(BackendError::new(ErrorKind::Http, msg)),
                }
            }
            Err(e) => return Err(transport_error(e)),
        }
    }
    Err(BackendError::new(
        ErrorKind::Fatal,
        format!("{base}: every dialect was refused"),
    ))
}

/// One embedding: OpenAI's route (a pooled vector, or per-token vectors mean-pooled here), or
/// llama-server's own route when its model has no pooling. A server without embeddings is
/// remembered and answers `Unsupported` from then on.
pub async fn embed(
    client: &reqwest::Client,
    base: &str,
    key: Option<&str>,
    model: &str,
    talk: &Mutex<Talk>,
    text: &str,
) -> Result<WorkOutcome, BackendError> {
    let mut route = match talk.lock().unwrap().embeddings.clone() {
        Embeddings::No(why) => return Err(BackendError::new(ErrorKind::Unsupported, why)),
        Embeddings::Yes { route, .. } => route,
        Embeddings::Unknown => EmbedRoute::OpenAi,
    };
    for _ in 0..2 {
        let (url, body) = match route {
            EmbedRoute::OpenAi => (
                format!("{base}/embeddings"),
                json!({"model": model, "input": text}),
            ),
            EmbedRoute::LlamaServer => (
                format!("{}/embedding", dialect::root_of(base)),
                json!({"content": text}),
            ),
        };
        match send(client, &url, key, Some(&body)).await {
            Ok(v) => {
                let (e, tokens) = match route {
                    EmbedRoute::OpenAi => (
                        &v["data"][0]["embedding"],
                        v["usage"]["prompt_tokens"].as_u64(),
                    ),
                    // `[{"index": 0, "embedding": [[…], …]}]`
                    EmbedRoute::LlamaServer => (&v[0]["embedding"], None),
                };
                let pooled = dialect::pool_embedding(e)
                    .map_err(|e| BackendError::new(ErrorKind::Malformed, format!("{url}: {e}")))?;
                let per_token = pooled.tokens > 0;
                talk.lock().unwrap().embeddings = Embeddings::Yes {
                    dim: pooled.vector.len(),
                    per_token,
                    route,
                };
                return Ok(WorkOutcome::Vector {
                    vector: pooled.vector,
                    model: embedding_identity(model, per_token),
                    prompt_tokens: tokens.unwrap_or(pooled.tokens as u64) as u32,
                });
            }
            Err(HttpError::Status(status, body)) => {
                if route == EmbedRoute::OpenAi && dialect::pooling_none(&body) {
                    route = EmbedRoute::LlamaServer;
                    continue;
                }
                let msg = status_message(&url, status, &body);
                if dialect::no_embeddings(status, &body) {
                    talk.lock().unwrap().embeddings =
                        Embeddings::No(format!("HTTP {status}: {}", dialect::short(&body)));
                    return Err(BackendError::new(ErrorKind::Unsupported, msg));
                }
                let kind = match dialect::classify(status, &body, None) {
                    Verdict::ServerError => ErrorKind::Http,
                    _ => ErrorKind::Fatal,
                };
                return Err(BackendError::new(kind, msg));
            }
            Err(e) => return Err(transport_error(e)),
        }
    }
    Err(BackendError::new(
        ErrorKind::Unsupported,
        format!("{base}: no embeddings route answered"),
    ))
}
