//! The forms in which OpenAI-compatible servers take an output shape ("dialects"): how a chat
//! request is written in each, how an HTTP error is read (the server refused the request's form,
//! refused this one request, or failed), and the per-endpoint negotiation that finds the best
//! form a server honours. Pure functions and plain data; the HTTP lives in `openai/`.
//!
//! Servers fail in two ways here. Some reject a form they do not know with an error that names
//! it (llama-cpp-python answers `json_schema` with HTTP 500 "Input should be 'text' or
//! 'json_object'"); that is no sign the server is down, so the next form is tried at once.
//! Others take any field and ignore what they do not know (vLLM, Ollama, llama-cpp-python for
//! unknown top-level fields): the answer arrives unconstrained, so answers that keep failing
//! validation under a form demote it too.

use crate::llm::config::Dialect;
use crate::llm::shape;
use crate::llm::types::{ChatMessage, OutputShape, Sampling};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Answers in a row under one form that failed validation (answers cut off at their token
/// budget aside) before the server is taken to ignore that form.
pub const IGNORED_AFTER: u32 = 3;

/// How long a ruled-out form stays out before it is tried again: a server may have been
/// restarted, upgraded or over a passing fault (a crash inside its structured-output code).
pub const RETRY_AFTER: Duration = Duration::from_secs(600);

/// Where a chat request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatRoute {
    /// `{base}/chat/completions`.
    OpenAi,
    /// Ollama's own `{root}/api/chat` (the base without its `/v1`).
    OllamaNative,
}

/// A chat request written in one dialect.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// The JSON body.
    pub body: Value,
    /// Where it goes.
    pub route: ChatRoute,
    /// Whether the answer comes as `{"value": …}` and must be unwrapped.
    pub wrapped: bool,
}

/// The server's root (the base URL without a trailing `/v1`), for non-OpenAI paths.
pub fn root_of(base: &str) -> &str {
    base.trim_end_matches('/').trim_end_matches("/v1")
}

/// A schema as OpenAI's strict mode wants it: every object lists all its properties as required
/// and allows no others (our validation still checks the original schema).
pub fn strict_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(m) => {
            let mut out: serde_json::Map<String, Value> = m
                .iter()
                .map(|(k, v)| {
                    let v = match k.as_str() {
                        "properties" => match v {
                            Value::Object(props) => Value::Object(
                                props
                                    .iter()
                                    .map(|(p, s)| (p.clone(), strict_schema(s)))
                                    .collect(),
                            ),
                            other => other.clone(),
                        },
                        "items" => strict_schema(v),
                        _ => v.clone(),
                    };
                    (k.clone(), v)
                })
                .collect();
            if out.get("type").and_then(Value::as_str) == Some("object") {
                let keys: Vec<Value> = out
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| p.keys().map(|k| json!(k)).collect())
                    .unwrap_or_default();
                out.insert("required".into(), Value::Array(keys));
                out.insert("additionalProperties".into(), json!(false));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// Writes a chat request in a dialect (`None`: free text, nothing to constrain). `strict` is
/// OpenAI's strict flag for `JsonSchema`.
pub fn chat_request(
    dialect: Option<Dialect>,
    strict: bool,
    model: &str,
    messages: &[ChatMessage],
    shape_: &OutputShape,
    sampling: &Sampling,
) -> Result<ChatRequest, String> {
    let mut msgs: Vec<Value> = messages
        .iter()
        .map(|m| json!({"role": m.role, "content": m.content}))
        .collect();
    if dialect == Some(Dialect::PromptOnly)
        && let Some(instr) = shape::instruction(shape_)
        && let Some(last) = msgs.last_mut()
    {
        let c = last["content"].as_str().unwrap_or_default().to_string();
        last["content"] = json!(format!("{c}\n{instr}"));
    }
    if dialect == Some(Dialect::OllamaFormat) {
        let schema = shape::wrapped_schema(shape_).ok_or("free text has no format")?;
        return Ok(ChatRequest {
            body: json!({
                "model": model, "messages": msgs, "stream": false, "format": schema,
                "options": {"temperature": sampling.temperature, "top_p": sampling.top_p,
                            "num_predict": sampling.max_tokens, "seed": sampling.seed},
            }),
            route: ChatRoute::OllamaNative,
            wrapped: !matches!(shape_, OutputShape::Json(_)),
        });
    }
    let mut body = json!({
        "model": model, "messages": msgs, "temperature": sampling.temperature,
        "top_p": sampling.top_p, "max_tokens": sampling.max_tokens, "seed": sampling.seed, "stream": false,
    });
    let is_json = matches!(shape_, OutputShape::Json(_));
    let schema = || shape::wrapped_schema(shape_).ok_or("free text has no schema");
    let grammar = || shape::grammar(shape_)?.ok_or_else(|| "free text has no grammar".to_string());
    let mut wrapped = false;
    match dialect {
        None | Some(Dialect::PromptOnly) | Some(Dialect::Auto) => {}
        Some(Dialect::JsonSchema) => {
            let s = schema()?;
            let s = if strict { strict_schema(&s) } else { s };
            body["response_format"] = json!({"type": "json_schema",
                "json_schema": {"name": "answer", "strict": strict, "schema": s}});
            wrapped = !is_json;
        }
        Some(Dialect::JsonObject) => {
            body["response_format"] = json!({"type": "json_object", "schema": schema()?});
            wrapped = !is_json;
        }
        Some(Dialect::Grammar) => body["grammar"] = json!(grammar()?),
        Some(Dialect::VllmStructured) => {
            body["structured_outputs"] = if is_json {
                json!({"json": schema()?})
            } else {
                json!({"grammar": grammar()?})
            };
        }
        Some(Dialect::VllmGuided) => {
            if is_json {
                body["guided_json"] = schema()?;
            } else {
                body["guided_grammar"] = json!(grammar()?);
            }
        }
        Some(Dialect::OllamaFormat) => unreachable!("handled above"),
    }
    Ok(ChatRequest {
        body,
        route: ChatRoute::OpenAi,
        wrapped,
    })
}

/// A chat answer read from a server's JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatAnswer {
    /// The text as the shape's parser wants it (unwrapped from `{"value": …}` when it can be).
    pub text: String,
    /// Cut off at the token budget (`finish_reason: "length"`).
    pub cut_off: bool,
    /// Prompt tokens (0 when not reported).
    pub prompt_tokens: u32,
    /// Generated tokens (0 when not reported).
    pub gen_tokens: u32,
}

/// Reads a chat answer; `Err` when the JSON has no answer in it.
pub fn read_answer(
    req: &ChatRequest,
    shape_: &OutputShape,
    v: &Value,
) -> Result<ChatAnswer, String> {
    let (content, reason, prompt, gen_) = match req.route {
        ChatRoute::OpenAi => (
            v["choices"][0]["message"]["content"].as_str(),
            v["choices"][0]["finish_reason"].as_str(),
            v["usage"]["prompt_tokens"].as_u64(),
            v["usage"]["completion_tokens"].as_u64(),
        ),
        ChatRoute::OllamaNative => (
            v["message"]["content"].as_str(),
            v["done_reason"].as_str(),
            v["prompt_eval_count"].as_u64(),
            v["eval_count"].as_u64(),
        ),
    };
    let content = content.ok_or(match req.route {
        ChatRoute::OpenAi => "no choices[0].message.content in the answer",
        ChatRoute::OllamaNative => "no message.content in the answer",
    })?;
    // An answer that is not the wrapped form stays as it came: validation then judges it (and
    // counts it as evidence that the form was ignored).
    let text = if req.wrapped {
        shape::unwrap_json_answer(shape_, content).unwrap_or_else(|_| content.to_string())
    } else {
        content.to_string()
    };
    Ok(ChatAnswer {
        text,
        cut_off: reason == Some("length"),
        prompt_tokens: prompt.unwrap_or(0) as u32,
        gen_tokens: gen_.unwrap_or(0) as u32,
    })
}

/// How to read an HTTP error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The server refused the request's form (a field or a value it does not take): another
    /// form may work; the server itself is fine.
    FormRejected,
    /// This one request cannot be served (too long, unknown model, no access): fail it alone.
    RequestRefused,
    /// The server failed or is busy: retry, and count toward resting the endpoint.
    ServerError,
}

/// The words by which a server's error names a dialect's form: the fields it adds. An error
/// that names none of them is about something else (the model, the length, the key).
pub fn form_words(d: Dialect) -> &'static [&'static str] {
    match d {
        Dialect::Auto | Dialect::PromptOnly => &[],
        Dialect::JsonSchema => &["response_format", "json_schema", "invalid schema"],
        Dialect::Grammar => &["grammar"],
        Dialect::JsonObject => &["response_format", "json_object"],
        Dialect::VllmStructured => &["structured_outputs"],
        Dialect::VllmGuided => &["guided_"],
        Dialect::OllamaFormat => &["format"],
    }
}

/// Words of an answer that refuses a request for its length, whatever its form.
const LENGTH_WORDS: [&str; 5] = [
    "context_length_exceeded",
    "maximum context length",
    "exceed_context_size",
    "exceeds the available context",
    "context window",
];

/// Words by which an error refuses what it names (pydantic's "Input should be 'text' or
/// 'json_object'" / `literal_error`, OpenAI's "Unrecognized request argument", vLLM's
/// "Extra inputs are not permitted"). A 5xx that names a form without one of them is a
/// failure that merely mentions the form (a crash inside the structured-output code, a
/// traceback that echoes the request).
const REFUSAL_WORDS: [&str; 10] = [
    "input should be",
    "not supported",
    "unsupported",
    "unknown",
    "unrecognized",
    "invalid",
    "literal_error",
    "extra inputs",
    "must be one of",
    "not permitted",
];

/// Reads an HTTP error status and body for a request sent in `dialect` (`None`: free text).
pub fn classify(status: u16, body: &str, dialect: Option<Dialect>) -> Verdict {
    let b = body.to_ascii_lowercase();
    let too_long = LENGTH_WORDS.iter().any(|w| b.contains(w));
    let words = dialect.map(form_words).unwrap_or(&[]);
    let names_form = words.iter().any(|w| b.contains(w));
    let refuses = REFUSAL_WORDS.iter().any(|w| b.contains(w));
    match status {
        408 | 429 | 503 => Verdict::ServerError,
        401 | 403 => Verdict::RequestRefused,
        // A server that is not Ollama has no /api/chat.
        404 | 405 if dialect == Some(Dialect::OllamaFormat) => Verdict::FormRejected,
        400..=499 if too_long => Verdict::RequestRefused,
        400..=499 if names_form => Verdict::FormRejected,
        400..=499 => Verdict::RequestRefused,
        // A 5xx is a failure unless its body says the form was refused (llama-cpp-python
        // reports every validation error as HTTP 500; old llama-server builds too).
        500..=599 if names_form && refuses && !too_long => Verdict::FormRejected,
        _ => Verdict::ServerError,
    }
}

/// Whether an error from the embeddings route means this server makes no embeddings (not
/// started for them, no such route, a chat-only model).
pub fn no_embeddings(status: u16, body: &str) -> bool {
    let b = body.to_ascii_lowercase();
    matches!(status, 404 | 405 | 501)
        || [
            "embedding=true",
            "--embedding",
            "support embeddings",
            "support embedding",
            "embeddings api",
            "not an embedding model",
            "does not support the embed",
        ]
        .iter()
        .any(|w| b.contains(w))
}

/// Whether llama-server refused OpenAI-style embeddings because its model has no pooling
/// (its own `/embedding` route still gives per-token vectors).
pub fn pooling_none(body: &str) -> bool {
    body.to_ascii_lowercase().contains("pooling type 'none'")
}

/// A vector read from an embeddings answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Pooled {
    /// Unit length.
    pub vector: Vec<f32>,
    /// Token vectors that were averaged (0: the server gave one pooled vector).
    pub tokens: usize,
}

/// Reads `embedding`: a flat vector (a pooling model), or one vector per token (a chat model
/// without pooling, as llama-cpp-python's server gives), mean-pooled here. Normalised.
pub fn pool_embedding(e: &Value) -> Result<Pooled, String> {
    use crate::llm::types::MAX_EMBEDDING_DIM;
    let arr = e.as_array().ok_or("no embedding vector in the answer")?;
    let nums = |a: &[Value]| -> Result<Vec<f32>, String> {
        a.iter()
            .map(|x| {
                x.as_f64()
                    .map(|f| f as f32)
                    .ok_or_else(|| format!("{x} is not a number"))
            })
            .collect()
    };
    let (mut vector, tokens) = match arr.first() {
        None => return Err("empty embedding".into()),
        Some(Value::Array(_)) => {
            let rows: Vec<Vec<f32>> = arr
                .iter()
                .map(|r| nums(r.as_array().map(Vec::as_slice).unwrap_or(&[])))
                .collect::<Result<_, _>>()?;
            let dim = rows[0].len();
            if dim > MAX_EMBEDDING_DIM {
                return Err(format!(
                    "per-token vectors of {dim} numbers: more than the {MAX_EMBEDDING_DIM} of any embedder"
                ));
            }
            if dim == 0 || rows.iter().any(|r| r.len() != dim) {
                return Err("per-token vectors of different sizes".into());
            }
            let mut mean = vec![0f32; dim];
            for r in &rows {
                for (m, x) in mean.iter_mut().zip(r) {
                    *m += x;
                }
            }
            let n = rows.len() as f32;
            mean.iter_mut().for_each(|m| *m /= n);
            (mean, rows.len())
        }
        Some(_) if arr.len() > MAX_EMBEDDING_DIM => {
            return Err(format!(
                "{} numbers in the embedding: more than the {MAX_EMBEDDING_DIM} of any embedder",
                arr.len()
            ));
        }
        Some(_) => (nums(arr)?, 0),
    };
    let n = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if !n.is_finite() || n <= 0.0 {
        return Err("a zero or non-finite embedding".into());
    }
    vector.iter_mut().for_each(|x| *x /= n);
    Ok(Pooled { vector, tokens })
}

/// One endpoint's negotiation: the forms still in the running, what ruled the others out, and
/// the evidence about the current one. A ruled-out form is tried again after [`RETRY_AFTER`].
#[derive(Debug, Clone)]
pub struct Negotiation {
    pinned: bool,
    candidates: Vec<Dialect>,
    /// Forms ruled out, with why and when.
    pub ruled_out: Vec<(Dialect, String, Instant)>,
    /// `strict: true` with `JsonSchema` (turned off when a server finds our schema not strict
    /// enough).
    pub strict: bool,
    invalid_streak: u32,
    /// Answers that validated under the current form.
    pub confirmed: u64,
}

impl Negotiation {
    /// Starts from the configured dialect (`Auto`: every form, best first).
    pub fn new(configured: Dialect) -> Self {
        let (pinned, candidates) = match configured {
            Dialect::Auto => (false, Dialect::ORDER.to_vec()),
            d => (true, vec![d]),
        };
        Self {
            pinned,
            candidates,
            ruled_out: Vec::new(),
            strict: true,
            invalid_streak: 0,
            confirmed: 0,
        }
    }

    /// The form to use now.
    pub fn current(&self) -> Dialect {
        self.candidates
            .first()
            .copied()
            .unwrap_or(Dialect::PromptOnly)
    }

    /// Whether the form is the config's, not negotiated.
    pub fn pinned(&self) -> bool {
        self.pinned
    }

    /// The server rejected `d` (a request in flight may report a form already dropped: then
    /// nothing changes). Returns whether another form should be tried now.
    pub fn reject(&mut self, d: Dialect, why: &str) -> bool {
        if self.pinned || d == Dialect::PromptOnly {
            return false;
        }
        if d == Dialect::JsonSchema && self.strict && why.to_ascii_lowercase().contains("schema") {
            // OpenAI's "Invalid schema for response_format": our schema, not the form, was
            // refused; strict mode off keeps the form.
            let lower = why.to_ascii_lowercase();
            if lower.contains("invalid schema") || lower.contains("invalid_json_schema") {
                self.strict = false;
                return true;
            }
        }
        if let Some(i) = self.candidates.iter().position(|c| *c == d) {
            self.candidates.remove(i);
            self.ruled_out.push((d, short(why), Instant::now()));
            if i == 0 {
                self.invalid_streak = 0;
                self.confirmed = 0;
            }
        }
        true
    }

    /// Puts the forms ruled out at least [`RETRY_AFTER`] before `now` back in the running, in
    /// their place in [`Dialect::ORDER`]. Returns whether any came back.
    pub fn retry_due(&mut self, now: Instant) -> bool {
        let due = |at: &Instant| now.saturating_duration_since(*at) >= RETRY_AFTER;
        if !self.ruled_out.iter().any(|(_, _, at)| due(at)) {
            return false;
        }
        let before = self.current();
        for (d, _, _) in self.ruled_out.iter().filter(|(_, _, at)| due(at)) {
            if !self.candidates.contains(d) {
                self.candidates.push(*d);
            }
        }
        self.ruled_out.retain(|(_, _, at)| !due(at));
        let rank = |d: &Dialect| Dialect::ORDER.iter().position(|o| o == d);
        self.candidates.sort_by_key(rank);
        if self.current() != before {
            self.invalid_streak = 0;
            self.confirmed = 0;
        }
        true
    }

    /// An answer arrived under `d`: `valid` if it passed validation, `cut_off` if it stopped at
    /// its token budget. Returns a note when the form is now taken as ignored and dropped.
    pub fn answered(&mut self, d: Dialect, valid: bool, cut_off: bool) -> Option<String> {
        if d != self.current() {
            return None;
        }
        if valid {
            self.invalid_streak = 0;
            self.confirmed += 1;
            return None;
        }
        if cut_off || self.pinned || d == Dialect::PromptOnly {
            return None;
        }
        self.invalid_streak += 1;
        if self.invalid_streak < IGNORED_AFTER {
            return None;
        }
        let why = format!(
            "{IGNORED_AFTER} answers in a row did not match their shape: the server seems to ignore it"
        );
        self.reject(d, &why);
        Some(format!(
            "{} dropped ({why}); now {}",
            d.label(),
            self.current().label()
        ))
    }

    /// In words: the form in use and what was ruled out.
    pub fn describe(&self) -> String {
        let mut s = self.current().label().to_string();
        if self.pinned {
            s.push_str(" (pinned)");
        } else if self.confirmed == 0 && self.current() != Dialect::PromptOnly {
            s.push_str(" (not yet confirmed)");
        }
        if self.current() == Dialect::JsonSchema && !self.strict {
            s.push_str(", not strict");
        }
        if !self.ruled_out.is_empty() {
            let gone: Vec<String> = self
                .ruled_out
                .iter()
                .map(|(d, why, _)| format!("{}: {why}", d.label()))
                .collect();
            s.push_str(&format!("; ruled out {}", gone.join("; ")));
        }
        s
    }
}

/// The gist of a server's error body for a status line.
pub fn short(why: &str) -> String {
    // The message of a JSON error body (OpenAI's `error.message`, vLLM's `message`, FastAPI's
    // `detail`), else the text as it is.
    let v: Option<Value> = serde_json::from_str(why).ok();
    let message = v.as_ref().and_then(|v| {
        [
            &v["error"]["message"],
            &v["message"],
            &v["error"],
            &v["detail"],
        ]
        .into_iter()
        .find_map(|m| m.as_str())
    });
    let one: String = message
        .unwrap_or(why)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    // pydantic's message is the useful part of llama-cpp-python's long error.
    let key = one
        .find("'msg': ")
        .map(|i| &one[i + 7..])
        .and_then(|m| {
            // Python quotes with " a text that holds a ', else with '.
            let q = m.chars().next()?;
            let rest = m.get(1..)?;
            rest.find(q).map(|end| &rest[..end])
        })
        .unwrap_or(&one);
    key.chars().take(120).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs() -> Vec<ChatMessage> {
        vec![ChatMessage::user("Rate it.")]
    }

    #[test]
    fn each_dialect_writes_its_own_form() {
        let shape_ = OutputShape::Integer { min: 1, max: 3 };
        let s = Sampling::greedy(8);
        let r = chat_request(Some(Dialect::JsonSchema), true, "m", &msgs(), &shape_, &s).unwrap();
        assert_eq!(r.body["response_format"]["type"], "json_schema");
        assert_eq!(
            r.body["response_format"]["json_schema"]["schema"]["properties"]["value"]["maximum"],
            3
        );
        assert!(r.wrapped);
        let r = chat_request(Some(Dialect::Grammar), true, "m", &msgs(), &shape_, &s).unwrap();
        assert_eq!(
            r.body["grammar"].as_str(),
            shape::grammar(&shape_).unwrap().as_deref(),
            "the embedded backend's own grammar"
        );
        assert!(!r.wrapped && r.body.get("response_format").is_none());
        let r = chat_request(Some(Dialect::JsonObject), true, "m", &msgs(), &shape_, &s).unwrap();
        assert_eq!(r.body["response_format"]["type"], "json_object");
        assert!(r.body["response_format"]["schema"].is_object());
        let r = chat_request(
            Some(Dialect::VllmStructured),
            true,
            "m",
            &msgs(),
            &shape_,
            &s,
        )
        .unwrap();
        assert!(r.body["structured_outputs"]["grammar"].is_string());
        let r = chat_request(Some(Dialect::VllmGuided), true, "m", &msgs(), &shape_, &s).unwrap();
        assert!(r.body["guided_grammar"].is_string());
        let r = chat_request(Some(Dialect::OllamaFormat), true, "m", &msgs(), &shape_, &s).unwrap();
        assert_eq!(r.route, ChatRoute::OllamaNative);
        assert_eq!(r.body["options"]["num_predict"], 8);
        assert!(r.body["format"].is_object());
        let r = chat_request(Some(Dialect::PromptOnly), true, "m", &msgs(), &shape_, &s).unwrap();
        assert!(
            r.body["messages"][0]["content"]
                .as_str()
                .unwrap()
                .contains("from 1 to 3")
        );
        let r = chat_request(None, true, "m", &msgs(), &OutputShape::Text, &s).unwrap();
        assert_eq!(r.body["messages"][0]["content"], "Rate it.");
        let json_shape =
            OutputShape::Json(json!({"type": "object", "properties": {"a": {"type": "integer"}}}));
        let r = chat_request(
            Some(Dialect::VllmGuided),
            true,
            "m",
            &msgs(),
            &json_shape,
            &s,
        )
        .unwrap();
        assert!(r.body["guided_json"].is_object());
    }

    #[test]
    fn strict_schemas_require_every_property() {
        let s = json!({"type": "object", "properties": {"a": {"type": "string"},
            "b": {"type": "array", "items": {"type": "object", "properties": {"c": {"type": "integer"}}}}}, "required": ["a"]});
        let t = strict_schema(&s);
        assert_eq!(t["required"], json!(["a", "b"]));
        assert_eq!(t["additionalProperties"], json!(false));
        assert_eq!(t["properties"]["b"]["items"]["required"], json!(["c"]));
    }

    #[test]
    fn errors_are_read_by_kind() {
        let lcp = r#"{"error":{"message":"1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}","type":"internal_server_error"}}"#;
        let js = Some(Dialect::JsonSchema);
        assert_eq!(classify(500, lcp, js), Verdict::FormRejected);
        // The same body for a request without that form is the server's failure.
        assert_eq!(classify(500, lcp, None), Verdict::ServerError);
        assert_eq!(
            classify(
                400,
                r#"{"error":{"message":"Unrecognized request argument supplied: grammar","type":"invalid_request_error"}}"#,
                Some(Dialect::Grammar)
            ),
            Verdict::FormRejected
        );
        assert_eq!(
            classify(
                400,
                r#"{"error":{"code":400,"message":"response_format type must be one of \"text\" or \"json_object\", but got: json_schema","type":"invalid_request_error"}}"#,
                js
            ),
            Verdict::FormRejected
        );
        assert_eq!(
            classify(500, r#"{"error":"boom"}"#, js),
            Verdict::ServerError
        );
        // A crash that merely mentions the form (a traceback echoing the request) is the
        // server's failure, not a refusal of the form.
        assert_eq!(
            classify(
                500,
                r#"{"error":{"message":"CUDA error: out of memory\n  File \"server.py\", in create_chat_completion(response_format=...)","type":"internal_server_error"}}"#,
                js
            ),
            Verdict::ServerError
        );
        assert_eq!(
            classify(
                502,
                "upstream crashed while compiling the grammar",
                Some(Dialect::Grammar)
            ),
            Verdict::ServerError
        );
        assert_eq!(
            classify(500, "grammar: unknown rule 'root'", Some(Dialect::Grammar)),
            Verdict::FormRejected
        );
        assert_eq!(
            classify(
                503,
                r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#,
                js
            ),
            Verdict::ServerError
        );
        assert_eq!(
            classify(
                400,
                r#"{"error":{"message":"This model's maximum context length is 2048 tokens (response_format)","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
                js
            ),
            Verdict::RequestRefused
        );
        assert_eq!(
            classify(401, "invalid api key", js),
            Verdict::RequestRefused
        );
        assert_eq!(
            classify(404, "model not found", js),
            Verdict::RequestRefused
        );
        assert_eq!(
            classify(404, "404 page not found", Some(Dialect::OllamaFormat)),
            Verdict::FormRejected
        );
        assert_eq!(classify(400, "bad seed", None), Verdict::RequestRefused);
        assert!(no_embeddings(
            500,
            r#"{"error":{"message":"Llama model must be created with embedding=True to call this method"}}"#
        ));
        assert!(no_embeddings(
            501,
            "This server does not support embeddings. Start it with `--embeddings`"
        ));
        assert!(!no_embeddings(500, "boom"));
        assert!(pooling_none(
            "Pooling type 'none' is not OAI compatible. Please use a different pooling type"
        ));
    }

    #[test]
    fn the_gist_of_a_long_error_is_kept() {
        let lcp = "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}";
        assert_eq!(short(lcp), "Input should be 'text' or 'json_object'");
        assert_eq!(short("HTTP 400:  bad\n thing"), "HTTP 400: bad thing");
        let body = serde_json::json!({"error": {"message": lcp, "type": "internal_server_error"}});
        assert_eq!(
            short(&body.to_string()),
            "Input should be 'text' or 'json_object'"
        );
        assert_eq!(short(r#"{"detail":"Not Found"}"#), "Not Found");
    }

    #[test]
    fn flat_and_per_token_embeddings_are_pooled_and_normalised() {
        let p = pool_embedding(&json!([3.0, 4.0])).unwrap();
        assert_eq!((p.vector.clone(), p.tokens), (vec![0.6, 0.8], 0));
        let p = pool_embedding(&json!([[1.0, 4.0], [5.0, 4.0]])).unwrap();
        assert_eq!((p.vector, p.tokens), (vec![0.6, 0.8], 2));
        assert!(pool_embedding(&json!([])).is_err());
        assert!(pool_embedding(&json!([[1.0], [1.0, 2.0]])).is_err());
        assert!(pool_embedding(&json!([0.0, 0.0])).is_err());
        assert!(pool_embedding(&json!("x")).is_err());
    }

    #[test]
    fn ruled_out_forms_are_tried_again_after_a_while() {
        let mut n = Negotiation::new(Dialect::Auto);
        n.reject(
            Dialect::JsonSchema,
            "Input should be 'text' or 'json_object'",
        );
        n.reject(Dialect::JsonObject, "Input should be 'text'");
        for _ in 0..3 {
            n.answered(Dialect::Grammar, true, false);
        }
        assert_eq!((n.current(), n.confirmed), (Dialect::Grammar, 3));
        let now = Instant::now();
        assert!(!n.retry_due(now), "not yet");
        assert!(!n.retry_due(now + RETRY_AFTER / 2), "not yet");
        assert_eq!(n.ruled_out.len(), 2);
        // After the wait both come back, in their places: json_schema first again, unconfirmed.
        assert!(n.retry_due(now + RETRY_AFTER));
        assert!(n.ruled_out.is_empty());
        assert_eq!((n.current(), n.confirmed), (Dialect::JsonSchema, 0));
        assert!(
            n.describe().contains("not yet confirmed"),
            "{}",
            n.describe()
        );
        // Refused again: out again, and the next form is the grammar, then json_object.
        n.reject(
            Dialect::JsonSchema,
            "Input should be 'text' or 'json_object'",
        );
        assert_eq!(n.current(), Dialect::Grammar);
        n.reject(Dialect::Grammar, "unknown field grammar");
        assert_eq!(n.current(), Dialect::JsonObject);
        assert!(
            !n.retry_due(now + RETRY_AFTER),
            "each form waits from its own refusal"
        );
    }

    #[test]
    fn negotiation_moves_on_rejections_and_on_ignored_forms() {
        let mut n = Negotiation::new(Dialect::Auto);
        assert_eq!(n.current(), Dialect::JsonSchema);
        assert!(n.reject(
            Dialect::JsonSchema,
            "Input should be 'text' or 'json_object'"
        ));
        assert_eq!(n.current(), Dialect::Grammar);
        // A late rejection of a form already dropped changes nothing.
        n.reject(Dialect::JsonSchema, "again");
        assert_eq!(n.current(), Dialect::Grammar);
        // Cut-off answers are no evidence; valid answers reset the count.
        for _ in 0..5 {
            assert!(n.answered(Dialect::Grammar, false, true).is_none());
        }
        n.answered(Dialect::Grammar, false, false);
        n.answered(Dialect::Grammar, false, false);
        n.answered(Dialect::Grammar, true, false);
        n.answered(Dialect::Grammar, false, false);
        n.answered(Dialect::Grammar, false, false);
        assert_eq!(n.current(), Dialect::Grammar);
        assert!(n.answered(Dialect::Grammar, false, false).is_some());
        assert_eq!(n.current(), Dialect::JsonObject);
        assert!(
            n.describe().contains("ruled out json_schema"),
            "{}",
            n.describe()
        );
        // Down to the floor, which stays.
        for d in Dialect::ORDER {
            n.reject(d, "no");
        }
        assert_eq!(n.current(), Dialect::PromptOnly);
        // OpenAI's strict-schema complaint keeps the form, without strict.
        let mut n = Negotiation::new(Dialect::Auto);
        assert!(n.reject(
            Dialect::JsonSchema,
            "Invalid schema for response_format 'answer'"
        ));
        assert_eq!((n.current(), n.strict), (Dialect::JsonSchema, false));
        // A pinned form is never dropped.
        let mut n = Negotiation::new(Dialect::Grammar);
        assert!(!n.retry_due(Instant::now() + RETRY_AFTER));
        assert!(!n.reject(Dialect::Grammar, "no"));
        for _ in 0..5 {
            n.answered(Dialect::Grammar, false, false);
        }
        assert_eq!(n.current(), Dialect::Grammar);
    }
}
