//! Stand-in servers: OpenAI-compatible HTTP servers on this machine that answer every output
//! shape validly after a delay drawn from a throughput model, with no model behind them. They
//! measure the simulation's own cost and the pool's efficiency apart from any real model
//! (`simulacra bench scale`), and they are the endpoints the pool's tests fail, slow down and
//! bring back. Everything they answer is named "stand-in" (the model id, every bench line).
//!
//! The throughput model, per server: `batch` requests are served at once (more wait in the
//! server's queue, as in vLLM's scheduler); each takes the time to first token, `ttft_s`, then
//! its answer's tokens at `tokens_per_s`. A prompt whose first 512 characters (the resident's
//! identity block) were seen lately (`prefix_cache` prompts kept) pays a quarter of `ttft_s`,
//! as a server's prefix cache saves the prefill.

use super::http::{HttpServer, Options};
use crate::sim::hash::text_hash;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How fast a stand-in server answers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThroughputModel {
    /// Tokens per second generated for each request.
    pub tokens_per_s: f32,
    /// Requests served at once; more wait in the server's queue.
    pub batch: usize,
    /// Seconds to the first token (the prompt's prefill), a quarter of it for a cached prefix.
    pub ttft_s: f32,
    /// Prompt prefixes the server's cache keeps (0: none).
    pub prefix_cache: usize,
}

impl Default for ThroughputModel {
    /// About one vLLM server on one GPU with a 7–8B model: 40 tokens/s per request, 32 at a
    /// time, 0.15 s to the first token.
    fn default() -> Self {
        Self {
            tokens_per_s: 40.0,
            batch: 32,
            ttft_s: 0.15,
            prefix_cache: 256,
        }
    }
}

impl ThroughputModel {
    /// Seconds one request takes once it has a batch slot.
    pub fn seconds(&self, answer_tokens: u32, cached_prefix: bool) -> f64 {
        let ttft = if cached_prefix {
            self.ttft_s * 0.25
        } else {
            self.ttft_s
        };
        ttft as f64 + answer_tokens as f64 / self.tokens_per_s.max(0.001) as f64
    }
}

/// What a stand-in saw, and knobs the tests turn.
#[derive(Debug, Default)]
pub struct StandInState {
    /// Answer every request with HTTP 500 while set.
    pub failing: AtomicBool,
    /// Delays are multiplied by this many percent (100: as modelled).
    pub slowness: AtomicU32,
    /// Requests received and not yet answered (queued in the server or in a batch slot).
    pub open: AtomicUsize,
    /// The most that were open at once.
    pub peak_open: AtomicUsize,
    /// Requests answered.
    pub answered: AtomicU64,
    /// Prompts whose prefix was in the cache, and those whose was not.
    pub prefix_hits: AtomicU64,
    /// Prompts whose prefix was not in the cache.
    pub prefix_misses: AtomicU64,
    /// Every chat prompt's text, when `keep_prompts` is set (tests).
    pub prompts: Mutex<Vec<String>>,
    /// Keep the prompts.
    pub keep_prompts: AtomicBool,
}

/// A running stand-in server; stops when dropped.
pub struct StandIn {
    /// Base URL, ending in `/v1`.
    pub url: String,
    /// What it saw, and its knobs.
    pub state: Arc<StandInState>,
    _server: HttpServer,
}

/// The batch slots of one server.
struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

impl StandIn {
    /// Starts a stand-in on 127.0.0.1 and a free port. Its threads run at the lowest
    /// scheduling priority: a stand-in plays a server on another machine, so on a machine of
    /// few cores it yields its core to the simulation it serves (its answers still wait the
    /// throughput model's delays, which are sleeps).
    pub fn start(model: ThroughputModel) -> std::io::Result<Self> {
        let state = Arc::new(StandInState {
            slowness: AtomicU32::new(100),
            ..Default::default()
        });
        let slots = Arc::new(Slots {
            free: Mutex::new(model.batch.max(1)),
            freed: Condvar::new(),
        });
        let cache = Arc::new(Mutex::new(VecDeque::<u64>::new()));
        let st = state.clone();
        let server = HttpServer::start(
            Arc::new(move |path: &str, body: &[u8]| {
                let n = st.open.fetch_add(1, Ordering::SeqCst) + 1;
                st.peak_open.fetch_max(n, Ordering::SeqCst);
                let out = answer(path, body, model, &st, &slots, &cache);
                st.open.fetch_sub(1, Ordering::SeqCst);
                Some(out)
            }),
            Options {
                keep_alive: true,
                lowest_priority: true,
                ..Options::default()
            },
        )?;
        Ok(Self {
            url: server.url(false),
            state,
            _server: server,
        })
    }
}

/// The status and body for one request, after its modelled delay.
fn answer(
    path: &str,
    body: &[u8],
    model: ThroughputModel,
    state: &StandInState,
    slots: &Slots,
    cache: &Mutex<VecDeque<u64>>,
) -> (u16, String) {
    if path.ends_with("/models") {
        return (
            200,
            json!({"object": "list", "data": [{"id": "stand-in", "object": "model"}]}).to_string(),
        );
    }
    let req: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let chat = path.ends_with("/chat/completions");
    if !chat && !path.ends_with("/embeddings") {
        return (
            404,
            json!({"error": {"message": format!("no route {path}")}}).to_string(),
        );
    }
    let prompt = if chat {
        req["messages"]
            .as_array()
            .map(|m| {
                m.iter()
                    .filter_map(|x| x["content"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    } else {
        match &req["input"] {
            Value::Array(a) => a.first().and_then(Value::as_str).unwrap_or("").to_string(),
            v => v.as_str().unwrap_or("").to_string(),
        }
    };
    if chat && state.keep_prompts.load(Ordering::Relaxed) {
        state.prompts.lock().unwrap().push(prompt.clone());
    }
    let h = text_hash(&prompt);
    let (content, tokens) = if chat {
        let text = match schema_of(&req) {
            Some(schema) => instance(schema, h, "").to_string(),
            None => (*pick(TEXT_LINES, h)).to_string(),
        };
        let tokens = (text.len() / 4).max(1) as u32;
        (text, tokens)
    } else {
        (String::new(), 1)
    };
    // The prefix cache: the first 512 characters, as the identity block leads each prompt.
    let prefix: String = prompt.chars().take(512).collect();
    let key = text_hash(&prefix);
    let cached = model.prefix_cache > 0 && {
        let mut c = cache.lock().unwrap();
        let hit = if let Some(i) = c.iter().position(|k| *k == key) {
            c.remove(i);
            true
        } else {
            false
        };
        c.push_back(key);
        while c.len() > model.prefix_cache {
            c.pop_front();
        }
        hit
    };
    if cached {
        state.prefix_hits.fetch_add(1, Ordering::Relaxed);
    } else {
        state.prefix_misses.fetch_add(1, Ordering::Relaxed);
    }
    if state.failing.load(Ordering::Relaxed) {
        return (
            500,
            json!({"error": {"message": "stand-in told to fail"}}).to_string(),
        );
    }
    // Wait for a batch slot, then take the modelled time.
    {
        let mut free = slots.free.lock().unwrap();
        while *free == 0 {
            free = slots.freed.wait(free).unwrap();
        }
        *free -= 1;
    }
    let slow = state.slowness.load(Ordering::Relaxed) as f64 / 100.0;
    let secs = if chat {
        model.seconds(tokens, cached)
    } else {
        model.ttft_s as f64 * 0.25
    };
    std::thread::sleep(Duration::from_secs_f64(secs * slow));
    *slots.free.lock().unwrap() += 1;
    slots.freed.notify_one();
    state.answered.fetch_add(1, Ordering::Relaxed);
    let prompt_tokens = (prompt.len() / 4) as u32;
    if chat {
        (
            200,
            json!({
                "id": format!("standin-{h:x}"),
                "object": "chat.completion",
                "model": "stand-in",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": tokens, "total_tokens": prompt_tokens + tokens,
                          "prompt_tokens_details": {"cached_tokens": if cached { 128 } else { 0 }}}
            })
            .to_string(),
        )
    } else {
        (
            200,
            json!({
                "object": "list",
                "model": "stand-in",
                "data": [{"object": "embedding", "index": 0, "embedding": crate::llm::backend::scripted::bag_of_words_vector(&prompt)}],
                "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}
            })
            .to_string(),
        )
    }
}

/// The schema a request asks the answer to follow, in any of the forms servers take.
fn schema_of(req: &Value) -> Option<&Value> {
    let rf = &req["response_format"];
    rf["json_schema"]["schema"]
        .as_object()
        .map(|_| &rf["json_schema"]["schema"])
        .or_else(|| rf["schema"].as_object().map(|_| &rf["schema"]))
        .or_else(|| req["guided_json"].as_object().map(|_| &req["guided_json"]))
}

const TEXT_LINES: &[&str] = &[
    "Okay.",
    "Sounds good to me.",
    "I was just thinking about that.",
    "Let us talk later.",
];
const PHRASES: &[&str] = &[
    "having a cup of coffee",
    "reading a book",
    "working at the desk",
    "taking a walk in the park",
    "talking with a neighbour",
    "cleaning up the kitchen",
    "eating lunch",
    "planning the week",
];
const EMOJI: &[&str] = &["🙂", "☕", "📚", "🍳", "🚶", "💬"];

fn pick<'a>(items: &'a [&'a str], h: u64) -> &'a &'a str {
    &items[(h % items.len() as u64) as usize]
}

/// A value that follows `schema`, varied by `h` (each property and item from its own turn of
/// `h`): phrases that read like activities, emoji for an `emoji` field.
pub fn instance(schema: &Value, h: u64, field: &str) -> Value {
    crate::llm::shape::schema_value(schema, &Varied(h), field)
}

/// The chooser of [`instance`].
struct Varied(u64);

impl crate::llm::shape::Chooser for Varied {
    fn property(&self, i: usize) -> Self {
        Varied(self.0.rotate_left(7 * i as u32 + 3))
    }
    fn item(&self, i: usize) -> Self {
        Varied(self.0.rotate_left(i as u32 * 11 + 1).wrapping_add(i as u64))
    }
    fn option(&self, n: usize) -> usize {
        (self.0 % n as u64) as usize
    }
    fn count(&self, min: u64, max: Option<u64>) -> u64 {
        let max = max.map_or(min + 2, |m| m.max(min));
        min + self.0 % (max - min + 1)
    }
    fn integer(&self, lo: i64, hi: Option<i64>) -> i64 {
        let hi = hi.unwrap_or(lo + 9).max(lo);
        lo + (self.0 % (hi - lo + 1) as u64) as i64
    }
    fn boolean(&self) -> bool {
        self.0.is_multiple_of(2)
    }
    fn text(&self, field: &str, min: usize, max: Option<usize>) -> String {
        let mut s = if field == "emoji" {
            pick(EMOJI, self.0).to_string()
        } else {
            pick(PHRASES, self.0).to_string()
        };
        while s.chars().count() < min {
            s.push_str(" and more");
        }
        s.chars().take(max.unwrap_or(usize::MAX).max(min)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::shape::{parse, unwrap_json_answer, wrapped_schema};
    use crate::llm::types::OutputShape;

    #[test]
    fn instances_fit_every_shape() {
        let shapes = [
            OutputShape::Integer { min: 1, max: 10 },
            OutputShape::Choice(vec!["a".into(), "b".into(), "c".into()]),
            OutputShape::YesNo,
            OutputShape::Lines(3),
            OutputShape::Integers {
                count: 4,
                min: 1,
                max: 10,
            },
            OutputShape::Json(
                json!({"type": "object", "properties": {"plan": {"type": "array", "minItems": 5, "maxItems": 8, "items": {"type": "object", "properties": {"task": {"type": "string", "minLength": 3, "maxLength": 12}, "minutes": {"type": "integer", "enum": [5, 10, 15]}, "emoji": {"type": "string", "minLength": 1, "maxLength": 4}}, "required": ["task", "minutes"]}}}, "required": ["plan"]}),
            ),
        ];
        for s in &shapes {
            let schema = wrapped_schema(s).unwrap();
            for h in 0..50u64 {
                let text = instance(&schema, h.wrapping_mul(0x9E37_79B9), "").to_string();
                let inner = unwrap_json_answer(s, &text).unwrap();
                assert!(parse(s, &inner).is_ok(), "{s:?}: {text}");
            }
        }
    }
}
