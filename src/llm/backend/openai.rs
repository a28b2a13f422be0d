//! Any OpenAI-compatible server (llama.cpp's llama-server, Ollama, vLLM, OpenAI): chat
//! completions with a JSON schema where the server enforces one, and embeddings. Requests are
//! spread over the endpoints that are up; an endpoint that fails repeatedly rests and is then
//! probed again. The API key is read only from the environment variable the config names.

use super::{Backend, BackendError, ErrorKind, Health, Work, WorkDone, WorkKind, WorkOutcome};
use crate::llm::config::OpenAiConfig;
use crate::llm::shape;
use crate::llm::types::OutputShape;
use crossbeam_channel::Sender;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

struct Endpoint {
    url: String,
    in_flight: usize,
    failures: u32,
    down_until: Option<Instant>,
    probing: bool,
    last_error: Option<String>,
}

/// An OpenAI-compatible backend.
pub struct OpenAiBackend {
    index: usize,
    cfg: OpenAiConfig,
    endpoints: Vec<Endpoint>,
    client: reqwest::Client,
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
        let (api_key, key_error) = match &cfg.api_key_env {
            None => (None, None),
            Some(var) => match std::env::var(var) {
                Ok(k) if !k.trim().is_empty() => (Some(k), None),
                _ => (
                    None,
                    Some(format!("fatal: the API key variable ${var} is not set")),
                ),
            },
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("llm-http")
            .enable_all()
            .build()
            .expect("start the HTTP runtime");
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .expect("HTTP client");
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

    fn usable(&self, e: &Endpoint, now: Instant) -> bool {
        match e.down_until {
            None => true,
            // Resting; once the rest is over one probe request may go through.
            Some(t) => now >= t && !e.probing,
        }
    }

    fn pick(&mut self) -> Option<usize> {
        let now = Instant::now();
        let n = self.endpoints.len();
        let mut best: Option<usize> = None;
        for k in 0..n {
            let i = (self.turn + k) % n;
            let e = &self.endpoints[i];
            if !self.usable(e, now) || e.in_flight >= self.cfg.concurrency as usize {
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
}

impl Backend for OpenAiBackend {
    fn name(&self) -> &str {
        &self.cfg.name
    }

    fn model_id(&self) -> String {
        format!("openai:{}", self.cfg.model)
    }

    fn capacity(&self) -> usize {
        (self.cfg.concurrency as usize * self.endpoints.len()).max(1)
    }

    fn available(&self) -> bool {
        let now = Instant::now();
        self.key_error.is_none() && self.endpoints.iter().any(|e| self.usable(e, now))
    }

    fn start(&mut self, work: Work, done: Sender<WorkDone>) {
        let Some(ep) = self.pick() else {
            let _ = done.send(WorkDone {
                id: work.id,
                backend: self.index,
                endpoint: None,
                outcome: WorkOutcome::Failed(BackendError::new(
                    ErrorKind::Down,
                    "no endpoint is up",
                )),
            });
            return;
        };
        self.endpoints[ep].in_flight += 1;
        let base = self.endpoints[ep].url.clone();
        let client = self.client.clone();
        let key = self.api_key.clone();
        let cfg = self.cfg.clone();
        let index = self.index;
        self.runtime.spawn(async move {
            let left = work.deadline.saturating_duration_since(Instant::now());
            let outcome = match tokio::time::timeout(
                left,
                request(&client, &base, key.as_deref(), &cfg, &work.kind),
            )
            .await
            {
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
            WorkOutcome::Failed(err) if err.kind != ErrorKind::Fatal => {
                e.failures += 1;
                e.last_error = Some(err.message.clone());
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
        let up = self
            .endpoints
            .iter()
            .filter(|e| e.down_until.is_none())
            .count();
        let n = self.endpoints.len();
        let detail = if up == n {
            format!("{n} endpoint(s) up")
        } else {
            let why = self
                .endpoints
                .iter()
                .find_map(|e| e.last_error.clone())
                .unwrap_or_default();
            format!("{up}/{n} endpoints up; {why}")
        };
        if up > 0 || self.available() {
            (Health::Ok, detail)
        } else {
            (Health::Down, detail)
        }
    }
}

async fn request(
    client: &reqwest::Client,
    base: &str,
    key: Option<&str>,
    cfg: &OpenAiConfig,
    kind: &WorkKind,
) -> Result<WorkOutcome, BackendError> {
    match kind {
        WorkKind::Chat {
            messages,
            shape: s,
            sampling,
        } => {
            let mut msgs: Vec<Value> = messages
                .iter()
                .map(|m| json!({"role": m.role, "content": m.content}))
                .collect();
            let schema = if cfg.json_schema {
                shape::wrapped_schema(s)
            } else {
                None
            };
            if schema.is_none()
                && let Some(instr) = shape::instruction(s)
                && let Some(last) = msgs.last_mut()
            {
                let c = last["content"].as_str().unwrap_or_default().to_string();
                last["content"] = json!(format!("{c}\n{instr}"));
            }
            let mut body = json!({
                "model": cfg.model, "messages": msgs, "temperature": sampling.temperature,
                "top_p": sampling.top_p, "max_tokens": sampling.max_tokens, "seed": sampling.seed, "stream": false,
            });
            if let Some(schema) = &schema {
                body["response_format"] = json!({"type": "json_schema", "json_schema": {"name": "answer", "strict": true, "schema": schema}});
            }
            let v = post(client, &format!("{base}/chat/completions"), key, &body).await?;
            let content = v["choices"][0]["message"]["content"]
                .as_str()
                .ok_or_else(|| {
                    BackendError::new(
                        ErrorKind::Malformed,
                        format!("{base}: no choices[0].message.content in the answer"),
                    )
                })?;
            let text = if schema.is_some() && !matches!(s, OutputShape::Json(_)) {
                shape::unwrap_json_answer(s, content)
                    .map_err(|e| BackendError::new(ErrorKind::Malformed, format!("{base}: {e}")))?
            } else {
                content.to_string()
            };
            let usage = |k: &str| v["usage"][k].as_u64().unwrap_or(0) as u32;
            Ok(WorkOutcome::Text {
                text,
                prompt_tokens: usage("prompt_tokens"),
                cached_tokens: 0,
                gen_tokens: usage("completion_tokens"),
            })
        }
        WorkKind::Embed { text } => {
            let model = cfg
                .embedding_model
                .clone()
                .unwrap_or_else(|| cfg.model.clone());
            let v = post(
                client,
                &format!("{base}/embeddings"),
                key,
                &json!({"model": model, "input": text}),
            )
            .await?;
            let arr = v["data"][0]["embedding"].as_array().ok_or_else(|| {
                BackendError::new(
                    ErrorKind::Malformed,
                    format!("{base}: no data[0].embedding in the answer"),
                )
            })?;
            let mut vector: Vec<f32> = arr
                .iter()
                .filter_map(|x| x.as_f64().map(|f| f as f32))
                .collect();
            if vector.is_empty() {
                return Err(BackendError::new(
                    ErrorKind::Malformed,
                    format!("{base}: empty embedding"),
                ));
            }
            let n = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
            if n > 0.0 {
                vector.iter_mut().for_each(|x| *x /= n);
            }
            Ok(WorkOutcome::Vector {
                vector,
                model: format!("openai:{model}"),
                prompt_tokens: v["usage"]["prompt_tokens"].as_u64().unwrap_or(0) as u32,
            })
        }
    }
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    key: Option<&str>,
    body: &Value,
) -> Result<Value, BackendError> {
    let mut req = client.post(url).json(body);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp = req
        .send()
        .await
        .map_err(|e| BackendError::new(ErrorKind::Http, format!("{url}: {e}")))?;
    let status = resp.status();
    let bytes = resp
        .bytes()
        .await
        .map_err(|e| BackendError::new(ErrorKind::Http, format!("{url}: {e}")))?;
    if !status.is_success() {
        let snippet: String = String::from_utf8_lossy(&bytes).chars().take(200).collect();
        let kind = if status.is_server_error() || status.as_u16() == 429 || status.as_u16() == 408 {
            ErrorKind::Http
        } else {
            ErrorKind::Fatal
        };
        let hint = if status.as_u16() == 401 {
            " (check the API key variable named in config)"
        } else {
            ""
        };
        return Err(BackendError::new(
            kind,
            format!("{url}: HTTP {status}{hint}: {snippet}"),
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        BackendError::new(
            ErrorKind::Malformed,
            format!("{url}: answer is not JSON: {e}"),
        )
    })
}
