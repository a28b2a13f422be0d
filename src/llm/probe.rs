//! `simulacra check --probe`: contacts every configured backend and says what it found, the first
//! thing to run after editing the config. For a server, per endpoint: reachable, its models, the
//! dialect it takes shaped requests in (found as the game finds it), embeddings and their size,
//! and round-trip times. In-process backends load and answer one request each.

use super::backend::WorkKind;
use super::backend::dialect::Verdict;
use super::backend::openai::{self, Embeddings, HttpError, Talk};
use super::config::{BackendConfig, LlmConfig, OpenAiConfig};
use super::runtime::{LlmRuntime, ReplySource, Submission};
use super::types::{ChatMessage, LlmValue, OutputShape, Priority, Sampling};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// Shaped requests a probe sends: a yes/no, an integer and a JSON object.
fn probe_requests() -> Vec<(Vec<ChatMessage>, OutputShape, u32)> {
    vec![
        (
            vec![ChatMessage::user(
                "Is the sky blue on a clear day? Answer yes or no.",
            )],
            OutputShape::YesNo,
            4,
        ),
        (
            vec![ChatMessage::user(
                "On a scale of 1 to 10, how important is a friend's wedding? Answer with a number.",
            )],
            OutputShape::Integer { min: 1, max: 10 },
            4,
        ),
        (
            vec![ChatMessage::user(
                "Describe Isabella, who runs a cafe, as JSON with her name and age.",
            )],
            OutputShape::Json(serde_json::json!({
                "type": "object",
                "properties": {"name": {"type": "string", "maxLength": 30},
                               "age": {"type": "integer", "minimum": 1, "maximum": 120}},
                "required": ["name", "age"]
            })),
            40,
        ),
    ]
}

fn ms(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}

/// Probes every backend; returns the report and whether each one answered.
pub fn probe(config: &LlmConfig) -> (String, bool) {
    let mut out = String::new();
    let mut all_ok = true;
    for b in &config.backends {
        let ok = match b {
            BackendConfig::OpenAi(c) => probe_server(c, &mut out),
            BackendConfig::Llama(c) => {
                let _ = writeln!(
                    out,
                    "{} (Llama): llama.cpp inside this program, model {}; shapes by its own GBNF grammars (no dialect to find)",
                    c.name, c.model
                );
                let mut small = c.clone();
                // One slot and a small cache: the probe asks one thing at a time.
                small.slots = 1;
                small.context = 2048;
                probe_in_process(BackendConfig::Llama(small), true, &mut out)
            }
            BackendConfig::Bert(c) => {
                let _ = writeln!(
                    out,
                    "{} (Bert): sentence embedder inside this program, model {} (embeddings only)",
                    c.name, c.model
                );
                probe_in_process(b.clone(), false, &mut out)
            }
            BackendConfig::Scripted(c) => {
                let _ = writeln!(
                    out,
                    "{} (Scripted): answers from rules, no model ({} rules{})",
                    c.name,
                    c.rules.len(),
                    c.file
                        .as_ref()
                        .map(|f| format!(" + {f}"))
                        .unwrap_or_default()
                );
                true
            }
            BackendConfig::Replay(c) => {
                let found = crate::data::resolve_path(&c.file).exists();
                let _ = writeln!(
                    out,
                    "{} (Replay): answers from the recording {} ({})",
                    c.name,
                    c.file,
                    if found { "found" } else { "MISSING" }
                );
                found
            }
        };
        all_ok &= ok;
    }
    if let Some(e) = &config.embedding_backend {
        let _ = writeln!(out, "embeddings are asked of '{e}'");
    }
    // What servers said (model ids, error bodies) reaches the terminal without control
    // characters.
    (crate::data::clean_text(&out).into_owned(), all_ok)
}

/// Starts one in-process backend alone and times a first answer (loading included) and, for a
/// chat backend, a shaped answer and an embedding.
fn probe_in_process(b: BackendConfig, chat: bool, out: &mut String) -> bool {
    let name = b.name().to_string();
    let cfg = LlmConfig {
        backends: vec![b],
        embedding_backend: Some(name),
        cache: false,
        retries: 0,
        timeout_s: 120.0,
        ..Default::default()
    };
    let started = Instant::now();
    let rt = LlmRuntime::start(&cfg);
    let ask = |kind: WorkKind| {
        let id = rt.next_id();
        rt.submit(Submission {
            id,
            agent: None,
            purpose: "probe".into(),
            kind: std::sync::Arc::new(kind),
            priority: Priority::Normal,
            fallback: None,
        });
        let t = Instant::now();
        rt.recv_timeout(Duration::from_secs(180))
            .map(|r| (r, t.elapsed()))
    };
    let mut ok = true;
    if chat {
        let (messages, shape, max) = probe_requests().swap_remove(0);
        match ask(WorkKind::Chat {
            messages,
            shape,
            sampling: Sampling::greedy(max),
        }) {
            Some((r, _)) if !r.is_fallback() => {
                let _ = writeln!(
                    out,
                    "  loaded and gave a shaped answer ({:?}) in {}",
                    r.value,
                    ms(started.elapsed())
                );
                // Where it runs (the device, how much of the model is on it), as it said.
                if let Some(b) = rt.status.lock().unwrap().backends.first() {
                    let _ = writeln!(out, "  {}", b.detail);
                }
            }
            Some((r, _)) => {
                ok = false;
                let why = match r.source {
                    ReplySource::Fallback(w) => w,
                    _ => String::new(),
                };
                let _ = writeln!(out, "  NOT WORKING: {why}");
                return ok;
            }
            None => {
                let _ = writeln!(out, "  NOT WORKING: no answer in 180 s");
                return false;
            }
        }
    }
    match ask(WorkKind::Embed {
        text: "Isabella is planning a party at the cafe.".into(),
    }) {
        Some((r, took)) => match (&r.value, &r.source) {
            (LlmValue::Embedding(e), ReplySource::Model(_)) => {
                let first = if chat { "" } else { " (loading included)" };
                let _ = writeln!(
                    out,
                    "  embeddings: yes, {}d, identity {}, {}{first}",
                    e.dim(),
                    e.model,
                    ms(took)
                );
            }
            (_, ReplySource::Fallback(why)) => {
                ok &= chat; // a chat backend without embeddings still works
                let _ = writeln!(out, "  embeddings: NO ({why})");
            }
            _ => {}
        },
        None => {
            ok = false;
            let _ = writeln!(out, "  embeddings: no answer in 180 s");
        }
    }
    ok
}

/// Probes each endpoint of a server.
fn probe_server(c: &OpenAiConfig, out: &mut String) -> bool {
    let _ = writeln!(
        out,
        "{} (OpenAi): model {:?}, dialect {:?}{}",
        c.name,
        c.model,
        c.effective_dialect(),
        match &c.api_key_env {
            Some(v) => format!(", API key from ${v}"),
            None => String::new(),
        }
    );
    let (key, key_error) = openai::api_key(c);
    if let Some(e) = key_error {
        let _ = writeln!(out, "  {}", e.trim_start_matches("fatal: "));
        return false;
    }
    let ca_file = c
        .ca_file
        .as_deref()
        .map(crate::llm::model_files::resolve_model);
    let client = match openai::http_client(Duration::from_secs(5), ca_file.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(out, "  {e}");
            return false;
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(out, "  cannot start the HTTP runtime: {e}");
            return false;
        }
    };
    let mut all_ok = true;
    for url in &c.endpoints {
        let base = url.trim_end_matches('/');
        let _ = writeln!(out, "  {base}");
        let ok = rt.block_on(probe_endpoint(&client, base, key.as_deref(), c, out));
        all_ok &= ok;
    }
    all_ok
}

async fn probe_endpoint(
    client: &reqwest::Client,
    base: &str,
    key: Option<&str>,
    c: &OpenAiConfig,
    out: &mut String,
) -> bool {
    let limit = Duration::from_secs(60);
    let t = Instant::now();
    let models = tokio::time::timeout(
        limit,
        openai::send(client, &format!("{base}/models"), key, None),
    )
    .await;
    let rtt = t.elapsed();
    match models {
        Ok(Ok(v)) => {
            let ids: Vec<String> = v["data"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|m| m["id"].as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let shown: Vec<&str> = ids.iter().take(8).map(String::as_str).collect();
            let _ = writeln!(
                out,
                "    reachable: yes (GET /models in {}); models: {}{}",
                ms(rtt),
                if shown.is_empty() {
                    "none listed".to_string()
                } else {
                    shown.join(", ")
                },
                if ids.len() > shown.len() {
                    format!(" and {} more", ids.len() - shown.len())
                } else {
                    String::new()
                }
            );
            if !ids.is_empty() && !ids.contains(&c.model) {
                let _ = writeln!(
                    out,
                    "    warning: the configured model {:?} is not among them: set the backend's `model` to one of {} (llama.cpp's and llama-cpp-python's servers answer with their one model whatever the name)",
                    c.model,
                    ids.iter()
                        .take(5)
                        .map(|m| format!("{m:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        Ok(Err(HttpError::Status(s, body))) => {
            // An answer all the same: the server is there.
            let _ = writeln!(
                out,
                "    reachable: yes, but GET /models answered HTTP {s} in {}: {}{}",
                ms(rtt),
                super::backend::dialect::short(&body),
                if s == 401 {
                    " (check the API key variable)"
                } else {
                    ""
                }
            );
            if matches!(
                super::backend::dialect::classify(s, &body, None),
                Verdict::RequestRefused
            ) && s != 404
            {
                return false;
            }
        }
        Ok(Err(HttpError::NotJson(why))) => {
            let _ = writeln!(
                out,
                "    reachable: yes, but GET /models in {} did not answer JSON ({why}): is this an OpenAI-compatible base URL (…/v1)?",
                ms(rtt)
            );
            return false;
        }
        Ok(Err(HttpError::Transport(why))) => {
            let _ = writeln!(out, "    reachable: NO ({why})");
            return false;
        }
        Err(_) => {
            let _ = writeln!(
                out,
                "    reachable: NO (no answer in {} s)",
                limit.as_secs()
            );
            return false;
        }
    }
    // Shaped requests, as the game sends them: the dialect is found on the way.
    let talk = std::sync::Mutex::new(Talk::new(c.effective_dialect()));
    let mut valid = 0;
    let mut times = Vec::new();
    let mut errors = Vec::new();
    let reqs = probe_requests();
    for (messages, shape, max) in &reqs {
        let t = Instant::now();
        let r = tokio::time::timeout(
            limit,
            openai::chat(
                client,
                base,
                key,
                &c.model,
                &talk,
                messages,
                shape,
                &Sampling::greedy(*max),
            ),
        )
        .await;
        times.push(t.elapsed());
        match r {
            Ok(Ok(super::backend::WorkOutcome::Text { text, .. })) => {
                if super::shape::parse(shape, &text).is_ok() {
                    valid += 1;
                } else {
                    errors.push(format!("answer {text:?} does not match its shape"));
                }
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => errors.push(e.message),
            Err(_) => errors.push(format!("no answer in {} s", limit.as_secs())),
        }
    }
    let t = talk.lock().unwrap().clone();
    let mean = times.iter().sum::<Duration>() / times.len().max(1) as u32;
    let _ = writeln!(
        out,
        "    dialect: {}; {valid}/{} shaped answers valid, round trip {} on average",
        t.negotiation.describe(),
        reqs.len(),
        ms(mean)
    );
    for e in errors.iter().take(3) {
        let _ = writeln!(out, "      {e}");
    }
    // Embeddings.
    let model = c.embedding_model.as_ref().unwrap_or(&c.model);
    let t0 = Instant::now();
    let e = tokio::time::timeout(
        limit,
        openai::embed(
            client,
            base,
            key,
            model,
            &talk,
            "Isabella is planning a party.",
        ),
    )
    .await;
    let took = t0.elapsed();
    let state = talk.lock().unwrap().embeddings.clone();
    match (e, state) {
        (Ok(Ok(_)), Embeddings::Yes { .. }) => {
            let _ = writeln!(
                out,
                "    embeddings: yes, {} in {}",
                talk.lock().unwrap().embeddings.describe(),
                ms(took)
            );
        }
        (_, Embeddings::No(why)) => {
            let _ = writeln!(
                out,
                "    embeddings: no ({why}); the game falls back to the local embedder"
            );
        }
        (Ok(Err(e)), _) => {
            let _ = writeln!(out, "    embeddings: failed ({})", e.message);
        }
        (Err(_), _) => {
            let _ = writeln!(out, "    embeddings: no answer in {} s", limit.as_secs());
        }
        (Ok(Ok(_)), _) => {}
    }
    valid > 0
}
