//! `simulacra bench server`: the same shaped requests (integers, choices, yes/no, lines, lists of
//! integers, JSON objects) through the embedded llama.cpp backend and through a real
//! OpenAI-compatible server (llama-cpp-python's, started on the same model, or one at `--server`)
//! with default settings: how many the model answered validly rather than the fail-safe, and
//! throughput, side by side. The request mix is also what the real-server test sends.

use crate::bench::serve::llama_cpp_python::{LLAMA_CPP_PYTHON, LocalServer};
use crate::llm::backend::WorkKind;
use crate::llm::config::{BackendConfig, LlamaConfig, LlmConfig, OpenAiConfig};
use crate::llm::runtime::{LlmRuntime, Reply, Submission};
use crate::llm::shape;
use crate::llm::types::{ChatMessage, LlmValue, OutputShape, Priority, Sampling};
use serde_json::json;
use std::time::{Duration, Instant};

/// One shaped request.
#[derive(Debug, Clone)]
pub struct ShapedCase {
    /// A short name of its shape ("integer", "choice", …).
    pub kind: &'static str,
    /// The prompt.
    pub messages: Vec<ChatMessage>,
    /// The shape.
    pub shape: OutputShape,
    /// Token budget.
    pub max_tokens: u32,
}

const PEOPLE: [&str; 8] = [
    "Isabella", "Klaus", "Maria", "Sam", "Tom", "Abigail", "Carmen", "Eddy",
];
const EVENTS: [&str; 8] = [
    "brushing teeth",
    "a friend's wedding",
    "burning the toast",
    "winning the election",
    "reading the newspaper",
    "losing a wallet",
    "a party at the cafe",
    "watering the plants",
];
const PLACES: [&str; 5] = [
    "Hobbs Cafe",
    "Johnson Park",
    "The Rose and Crown Pub",
    "Oak Hill College",
    "Harvey Oak Supply Store",
];

/// Kinds of shape in the mix, in order.
pub const KINDS: [&str; 6] = ["integer", "choice", "yes/no", "lines", "integers", "json"];

/// `n` shaped requests, the six kinds in turn, each worded a little differently.
pub fn shaped_cases(n: usize) -> Vec<ShapedCase> {
    let system = ChatMessage::system(
        "You are a resident of the town of Smallville. Answer briefly and only with what is asked.",
    );
    (0..n)
        .map(|i| {
            let who = PEOPLE[i % PEOPLE.len()];
            let other = PEOPLE[(i + 3) % PEOPLE.len()];
            let event = EVENTS[(i / 6 + i) % EVENTS.len()];
            let (kind, prompt, shape_, max_tokens) = match i % 6 {
                0 => (
                    "integer",
                    format!("On a scale of 1 (mundane) to 10 (extremely poignant), rate this event in {who}'s life: {event}. Rating:"),
                    OutputShape::Integer { min: 1, max: 10 },
                    4,
                ),
                1 => {
                    let mut options: Vec<String> = PLACES.iter().map(|s| s.to_string()).collect();
                    options.rotate_left(i % PLACES.len());
                    options.truncate(3 + i % 3);
                    (
                        "choice",
                        format!("{who} wants to get a coffee and meet {other}. Where should {who} go? Choose one of: {}.", options.join(", ")),
                        OutputShape::Choice(options),
                        24,
                    )
                }
                2 => (
                    "yes/no",
                    format!("{who} sees {other} at the park. {other} is {event}. Should {who} start a conversation with {other}? Answer yes or no."),
                    OutputShape::YesNo,
                    4,
                ),
                3 => (
                    "lines",
                    format!("List three things {who} does in the morning before work, one per line."),
                    OutputShape::Lines(3),
                    60,
                ),
                4 => (
                    "integers",
                    format!("Rate the importance of each of these three events for {who} from 1 to 10: {event}; eating lunch; meeting {other}. Answer with a list of three numbers."),
                    OutputShape::Integers { count: 3, min: 1, max: 10 },
                    20,
                ),
                _ => (
                    "json",
                    format!("{who} meets {other} at the cafe. Write {who}'s next line to {other} and whether the conversation ends."),
                    OutputShape::Json(json!({
                        "type": "object",
                        "properties": {
                            "utterance": {"type": "string", "maxLength": 80},
                            "end_conversation": {"type": "boolean"}
                        },
                        "required": ["utterance", "end_conversation"],
                        "additionalProperties": false
                    })),
                    60,
                ),
            };
            ShapedCase {
                kind,
                messages: vec![system.clone(), ChatMessage::user(prompt)],
                shape: shape_,
                max_tokens,
            }
        })
        .collect()
}

/// What one backend made of the cases.
#[derive(Debug, Clone)]
pub struct ShapesRun {
    /// Each case's reply, in order.
    pub replies: Vec<Reply>,
    /// Wall time from the first submission to the last reply.
    pub wall: Duration,
    /// Generated tokens.
    pub gen_tokens: u64,
    /// Answers retried (invalid, cut off, failed).
    pub retries: u64,
}

impl ShapesRun {
    /// Model answers per kind of shape: "integer 17/17, choice 16/17, …".
    pub fn by_kind(&self, cases: &[ShapedCase]) -> String {
        KINDS
            .iter()
            .map(|k| {
                let (ok, all) = cases
                    .iter()
                    .zip(&self.replies)
                    .filter(|(c, _)| c.kind == *k)
                    .fold((0, 0), |(ok, all), (_, rep)| {
                        (ok + usize::from(!rep.is_fallback()), all + 1)
                    });
                format!("{k} {ok}/{all}")
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
    /// Answers the model gave (not the fail-safe).
    pub fn answered(&self) -> usize {
        self.replies.iter().filter(|r| !r.is_fallback()).count()
    }
    /// Model answers that do not pass their shape's validation again (must be 0).
    pub fn invalid(&self, cases: &[ShapedCase]) -> usize {
        self.replies
            .iter()
            .zip(cases)
            .filter(|(r, c)| !r.is_fallback() && !value_matches(&c.shape, &r.value))
            .count()
    }
}

/// Whether a value is one its shape allows (validation checked again from the outside).
pub fn value_matches(s: &OutputShape, v: &LlmValue) -> bool {
    match (s, v) {
        (OutputShape::Text, LlmValue::Text(t)) => !t.trim().is_empty(),
        (OutputShape::Integer { min, max }, LlmValue::Integer(n)) => (min..=max).contains(&n),
        (OutputShape::Choice(o), LlmValue::Choice(i, t)) => o.get(*i) == Some(t),
        (OutputShape::YesNo, LlmValue::Bool(_)) => true,
        (OutputShape::Lines(n), LlmValue::Lines(l)) => {
            l.len() == *n && l.iter().all(|x| !x.trim().is_empty())
        }
        (OutputShape::Integers { count, min, max }, LlmValue::Integers(v)) => {
            v.len() == *count && v.iter().all(|x| (min..=max).contains(&x))
        }
        (OutputShape::Json(schema), LlmValue::Json(v)) => {
            shape::validate_schema(schema, v, "$").is_ok()
        }
        _ => false,
    }
}

/// Submits every case at once and waits for every reply.
pub fn run_cases(
    rt: &LlmRuntime,
    cases: &[ShapedCase],
    wait: Duration,
) -> Result<ShapesRun, String> {
    let before = rt.stats.lock().unwrap().total();
    let start = Instant::now();
    let ids: Vec<u64> = cases
        .iter()
        .map(|c| {
            let id = rt.next_id();
            rt.submit(Submission {
                id,
                agent: None,
                purpose: format!("bench {}", c.kind),
                kind: std::sync::Arc::new(WorkKind::Chat {
                    messages: c.messages.clone(),
                    shape: c.shape.clone(),
                    sampling: Sampling::greedy(c.max_tokens),
                }),
                priority: Priority::Normal,
                fallback: None,
            });
            id
        })
        .collect();
    let mut got: Vec<Reply> = Vec::new();
    while got.len() < ids.len() {
        let left = wait.saturating_sub(start.elapsed());
        let r = rt.recv_timeout(left).ok_or_else(|| {
            format!(
                "{} of {} replies after {} s",
                got.len(),
                ids.len(),
                wait.as_secs()
            )
        })?;
        got.push(r);
    }
    let wall = start.elapsed();
    let after = rt.stats.lock().unwrap().total();
    let replies = ids
        .iter()
        .map(|id| {
            got.iter()
                .find(|r| r.id == *id)
                .cloned()
                .ok_or_else(|| format!("no reply for request {id}"))
        })
        .collect::<Result<_, _>>()?;
    Ok(ShapesRun {
        replies,
        wall,
        gen_tokens: after.gen_tokens - before.gen_tokens,
        retries: after.retries - before.retries,
    })
}

/// An `OpenAi` backend with default settings on one endpoint.
pub fn server_config(url: &str) -> LlmConfig {
    LlmConfig {
        backends: vec![BackendConfig::OpenAi(OpenAiConfig {
            endpoints: vec![url.to_string()],
            ..Default::default()
        })],
        embedding_backend: None,
        cache: false,
        timeout_s: 120.0,
        ..Default::default()
    }
}

/// Why answers were retried, per kind of request: "lines 5 (last: …)".
fn retried(rt: &LlmRuntime) -> String {
    let st = rt.stats.lock().unwrap();
    let parts: Vec<String> = st
        .by_purpose
        .iter()
        .filter(|(_, p)| p.retries > 0)
        .map(|(purpose, p)| {
            // "invalid answer \"…\": 2 lines, 3 wanted": the reason is what matters here.
            let last = p.last_error.as_deref().unwrap_or("");
            let why: String = last
                .rsplit_once("\": ")
                .map_or(last, |(_, reason)| reason)
                .chars()
                .take(100)
                .collect();
            format!(
                "{} {} (last: {why})",
                purpose.trim_start_matches("bench "),
                p.retries
            )
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("    retried: {}\n", parts.join("; "))
    }
}

fn row(label: &str, cases: &[ShapedCase], r: &ShapesRun, how: &str) -> String {
    let n = cases.len();
    format!(
        "{label:<44} {:>4}/{n:<4} {:>5.1}% {:>8} {:>7} {:>7.1} {:>6.2} {:>9.1}  {how}\n    by shape: {}\n",
        r.answered(),
        100.0 * r.answered() as f64 / n.max(1) as f64,
        n - r.answered(),
        r.retries,
        r.wall.as_secs_f64(),
        n as f64 / r.wall.as_secs_f64(),
        r.gen_tokens as f64 / r.wall.as_secs_f64(),
        r.by_kind(cases)
    )
}

/// Runs the benchmark and prints the table.
pub fn run(
    model: &str,
    requests: usize,
    threads: u32,
    server: Option<&str>,
    only: Option<&str>,
) -> Result<(), String> {
    let cases = shaped_cases(requests);
    let cases: Vec<ShapedCase> = match only {
        Some(kind) => cases.into_iter().filter(|c| c.kind == kind).collect(),
        None => cases,
    };
    if cases.is_empty() {
        return Err(format!(
            "--only {only:?}: the kinds are {}",
            KINDS.join(", ")
        ));
    }
    let model_path = crate::llm::backend::llama::resolve_model(model);
    crate::llm::backend::llama::check_model_file(&model_path)?;
    let kinds = match only {
        Some(kind) => format!("{kind} only, of {requests}"),
        None => KINDS.join(", "),
    };
    println!(
        "{} shaped requests ({kinds}), all submitted at once, greedy, cache off; model {model}; {threads} thread(s)",
        cases.len()
    );
    println!(
        "{:<44} {:>9} {:>6} {:>8} {:>7} {:>7} {:>6} {:>9}  how shapes are enforced",
        "backend", "answered", "rate", "failsafe", "retries", "wall s", "req/s", "gen tok/s"
    );
    // The embedded backend (dropped before the server starts, so they never share the cores).
    {
        let cfg = LlmConfig {
            backends: vec![BackendConfig::Llama(LlamaConfig {
                model: model.to_string(),
                threads: Some(threads),
                ..Default::default()
            })],
            embedding_backend: None,
            cache: false,
            timeout_s: 300.0,
            ..Default::default()
        };
        let rt = LlmRuntime::start(&cfg);
        // Warm-up (loading the model) outside the timing.
        run_cases(&rt, &shaped_cases(1), Duration::from_secs(300))?;
        let r = run_cases(&rt, &cases, Duration::from_secs(1800))?;
        if r.invalid(&cases) > 0 {
            return Err(format!(
                "{} embedded answers failed validation",
                r.invalid(&cases)
            ));
        }
        print!(
            "{}{}",
            row(
                "embedded llama.cpp (Llama, default settings)",
                &cases,
                &r,
                "GBNF grammar in the sampler"
            ),
            retried(&rt)
        );
    }
    // The server.
    let started;
    let (url, _guard) = match server {
        Some(u) => {
            started = None;
            (u.to_string(), None)
        }
        None => {
            let t = threads.to_string();
            let s = LocalServer::start(
                &model_path,
                &["--n_threads", &t, "--n_threads_batch", &t],
                Duration::from_secs(180),
            )?;
            started = Some(s.startup);
            (s.url.clone(), Some(s))
        }
    };
    let rt = LlmRuntime::start(&server_config(&url));
    run_cases(&rt, &shaped_cases(1), Duration::from_secs(300))?;
    let r = run_cases(&rt, &cases, Duration::from_secs(1800))?;
    let invalid = r.invalid(&cases);
    let st = rt.status.lock().unwrap().clone();
    // The dialect part of the status line ("dialect grammar (GBNF); ruled out …").
    let how = st
        .backends
        .first()
        .map(|b| {
            let d = b.detail.split("dialect ").nth(1).unwrap_or(&b.detail);
            format!("dialect {}", d.split("; embeddings").next().unwrap_or(d))
        })
        .unwrap_or_default();
    let label = match started {
        Some(_) => format!("llama-cpp-python {LLAMA_CPP_PYTHON} server (OpenAi)"),
        None => format!("{url} (OpenAi)"),
    };
    print!("{}{}", row(&label, &cases, &r, &how), retried(&rt));
    if let Some(s) = started {
        println!(
            "the server was started with --n_threads {threads} --n_threads_batch {threads} and answered in {:.1} s",
            s.as_secs_f64()
        );
    }
    if invalid > 0 {
        return Err(format!("{invalid} server answers failed validation"));
    }
    Ok(())
}
