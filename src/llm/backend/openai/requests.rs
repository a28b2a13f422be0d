//! One exchange with an endpoint: a chat request in the endpoint's dialect (moving to its next
//! dialect when the form is refused), or an embedding on whichever route the server has.

use super::http::{HttpError, send, status_message, transport_error};
use super::talk::{EmbedRoute, Embeddings, Talk, embedding_identity};
use crate::llm::backend::dialect::{self, ChatRoute, Verdict};
use crate::llm::backend::{BackendError, ErrorKind, WorkOutcome};
use crate::llm::config::Dialect;
use crate::llm::shape;
use crate::llm::types::{ChatMessage, OutputShape, Sampling};
use serde_json::json;
use std::sync::Mutex;
use std::time::Instant;

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
                    looped: None,
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
