//! LLM configuration (the `llm:` section of `config/simulacra.ron`, documented in
//! `config/README.md`): backends, routes, timeouts, retries, cache and record/replay.

use crate::data_error::{DataError, SourceLines};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The LLM runtime's settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// Backends, by name. The first is the default for every purpose not routed elsewhere.
    pub backends: Vec<BackendConfig>,
    /// Purpose label → backend name (e.g. `"converse": "big"`).
    pub routes: BTreeMap<String, String>,
    /// Backend that makes embeddings (default: the first).
    pub embedding_backend: Option<String>,
    /// Seconds before a request is abandoned and retried.
    pub timeout_s: f32,
    /// Retries after a failure (timeouts, HTTP errors, malformed or invalid answers).
    pub retries: u32,
    /// First back-off delay in milliseconds; doubles each retry.
    pub backoff_ms: u64,
    /// Consecutive failures before an endpoint is marked down.
    pub down_after: u32,
    /// Seconds a down endpoint rests before it is probed again.
    pub probe_after_s: f32,
    /// Latency above which a backend shows as "slow", in seconds.
    pub slow_after_s: f32,
    /// Answer identical deterministic requests from memory.
    pub cache: bool,
    /// Most cached answers kept.
    pub cache_entries: usize,
    /// Append every request and answer to this JSON-lines file.
    pub record: Option<String>,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            backends: vec![
                BackendConfig::Llama(LlamaConfig::default()),
                BackendConfig::Bert(BertConfig::default()),
            ],
            routes: BTreeMap::new(),
            embedding_backend: Some("embedder".into()),
            timeout_s: 60.0,
            retries: 2,
            backoff_ms: 250,
            down_after: 3,
            probe_after_s: 10.0,
            slow_after_s: 15.0,
            cache: true,
            cache_entries: 20_000,
            record: None,
        }
    }
}

/// One backend.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub enum BackendConfig {
    /// llama.cpp in-process (the default).
    Llama(LlamaConfig),
    /// Any OpenAI-compatible server.
    OpenAi(OpenAiConfig),
    /// Deterministic answers from rules (tests, demos).
    Scripted(ScriptedConfig),
    /// Answers from a recording made with `record`.
    Replay(ReplayConfig),
    /// A sentence embedder in-process (embeddings only), by default all-MiniLM-L6-v2.
    Bert(BertConfig),
}

impl BackendConfig {
    /// The backend's name.
    pub fn name(&self) -> &str {
        match self {
            BackendConfig::Llama(c) => &c.name,
            BackendConfig::OpenAi(c) => &c.name,
            BackendConfig::Scripted(c) => &c.name,
            BackendConfig::Replay(c) => &c.name,
            BackendConfig::Bert(c) => &c.name,
        }
    }
}

/// In-process llama.cpp.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlamaConfig {
    /// Name for routes.
    pub name: String,
    /// The GGUF file (relative paths are from the data folder).
    pub model: String,
    /// A separate GGUF for embeddings (default: the chat model, mean-pooled).
    pub embedding_model: Option<String>,
    /// CPU threads (default: all cores but one, at least one): the most it decodes with.
    pub threads: Option<u32>,
    /// Decode on the cores other programs leave, up to `threads` (read every half second; Linux):
    /// llama.cpp's threads spin at a barrier, so one held off its core holds up the rest.
    pub adapt_threads: bool,
    /// llama.cpp's flash attention. On the CPU it sums a long cache's parts in an order that
    /// depends on the thread count, so with `adapt_threads` a busy machine could change an
    /// answer; off (no slower measured on the small model), the thread count never does.
    pub flash_attention: bool,
    /// End and retry at once an answer that counts ("1, 2, 3, …") in a string, or writes one
    /// without words ("1.1.1.1…") (`llama::loops`).
    pub stop_loops: bool,
    /// Write what an answer's shape forces (keys, separators, an option's rest) as read tokens,
    /// and end an answer once whole, instead of a decode per token (`llm::forced`).
    pub write_forced: bool,
    /// Sequences decoded together (continuous batching slots).
    pub slots: u32,
    /// KV cache tokens in all (with `split_kv`, `context / slots` for each slot).
    pub context: u32,
    /// Each slot its own part of the KV cache (llama.cpp's non-unified cache; with 16 busy slots
    /// about twice the generation speed). `false`: one cache for all (less memory, slower full).
    pub split_kv: bool,
    /// Most tokens decoded in one pass.
    pub batch: u32,
    /// With `split_kv`, busy slots kept together (the lowest free slot) and the slots that read
    /// take equal shares: fewer passes over the weights per decode (off by default).
    pub pack_batches: bool,
    /// With `split_kv`, batches laid out so that no answer depends on what else is decoded
    /// with it (`llama::worker::layout`): runs repeat whatever the timing, towns side by side.
    pub batch_invariant: bool,
    /// Reuse cached prompt prefixes across requests (the KV cache of earlier requests).
    pub prefix_cache: bool,
    /// With `prefix_cache`, megabytes of residents' identity blocks, and of each resident's
    /// conversation so far, kept beside the KV cache once read, copied back, not read again
    /// (4–6 MB an identity and about 23 KB a token of conversation on the small model; 0: none).
    pub kept_prefixes_mb: u32,
    /// The form the model's weights are read in (see [`Weights`]).
    pub weights: Weights,
    /// The model's layers put on a GPU (`None`: all that fit, every layer tried first, then
    /// halves; `Some(0)`: the CPU only). Only a build with the `vulkan` feature finds a GPU.
    pub gpu_layers: Option<u32>,
    /// Which GPU: its name ("Vulkan0") or words of its description; `None`: the first found.
    pub gpu_device: Option<String>,
}

pub use crate::llm::model_files::Weights;

impl Default for LlamaConfig {
    fn default() -> Self {
        Self {
            name: "local".into(),
            model: "models/SmolLM2-135M-Instruct.Q4_1.gguf".into(),
            embedding_model: None,
            threads: None,
            adapt_threads: true,
            flash_attention: false,
            stop_loops: true,
            write_forced: true,
            slots: 16,
            context: 49_152,
            split_kv: true,
            batch: 512,
            pack_batches: false,
            batch_invariant: true,
            prefix_cache: true,
            kept_prefixes_mb: 256,
            weights: Weights::Q8_0,
            gpu_layers: None,
            gpu_device: None,
        }
    }
}

/// An OpenAI-compatible server (llama-server, Ollama, vLLM, OpenAI).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct OpenAiConfig {
    /// Name for routes.
    pub name: String,
    /// Base URLs ending in `/v1`; requests are spread over those that are up.
    pub endpoints: Vec<String>,
    /// Model name sent with each request.
    pub model: String,
    /// Model for `/v1/embeddings` (default: `model`).
    pub embedding_model: Option<String>,
    /// Environment variable holding the API key (never the key itself).
    pub api_key_env: Option<String>,
    /// How the server is asked to constrain an answer's shape: `Auto` (the default) finds out
    /// per endpoint, or pin one form.
    pub dialect: Dialect,
    /// Older configs: `false` is `dialect: PromptOnly`, `true` leaves `dialect` as it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub json_schema: Option<bool>,
    /// Requests in flight per endpoint (least outstanding requests first among those with room).
    pub concurrency: u32,
    /// Keep each resident's requests on one endpoint while it has room (rendezvous hashing on
    /// the resident), so the server's prefix cache (vLLM's automatic prefix caching,
    /// llama.cpp's slot reuse) keeps the resident's identity block warm; a full or resting
    /// endpoint's residents go to the least busy other one meanwhile.
    pub affinity: bool,
    /// A certificate (PEM; a CA's, or a server's own) trusted beside the system's, for a server
    /// whose certificate no authority here signed (relative paths: from the data folder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// An endpoint whose recent seconds per generated token exceed this many times the fastest
    /// endpoint's sheds its share: it is given a quarter of `concurrency` (at least one) until
    /// it is fast again. 0 turns shedding off.
    pub slow_factor: f32,
}

impl OpenAiConfig {
    /// The dialect in force, with the older `json_schema: false` read as `PromptOnly`.
    pub fn effective_dialect(&self) -> Dialect {
        match (self.dialect, self.json_schema) {
            (Dialect::Auto, Some(false)) => Dialect::PromptOnly,
            (d, _) => d,
        }
    }
}

/// How an OpenAI-compatible server is asked to constrain an answer's shape. Servers differ and
/// several silently ignore a form they do not know, so `Auto` tries them in the order below,
/// moves on when a server rejects a form (an HTTP error naming it) or keeps ignoring it
/// (answers that do not validate), and remembers the result per endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize, Default)]
pub enum Dialect {
    /// Find out per endpoint (the order of the variants below).
    #[default]
    Auto,
    /// `response_format: {"type": "json_schema", "json_schema": {"schema": …}}`: OpenAI,
    /// llama.cpp's llama-server, vLLM, Ollama's `/v1`.
    JsonSchema,
    /// A top-level GBNF `grammar`, the very grammar the embedded backend samples with:
    /// llama-server, llama-cpp-python's server.
    Grammar,
    /// `response_format: {"type": "json_object", "schema": …}`: llama-cpp-python, llama-server.
    JsonObject,
    /// vLLM's `structured_outputs: {"grammar": …}` (vLLM 0.10.2 and later).
    VllmStructured,
    /// vLLM's older `guided_grammar` field (before 0.12).
    VllmGuided,
    /// Ollama's own `/api/chat` with `format: <schema>`.
    OllamaFormat,
    /// Nothing enforced: the shape is asked for in the prompt and the answer validated.
    PromptOnly,
}

impl Dialect {
    /// The forms `Auto` tries, best first.
    pub const ORDER: [Dialect; 7] = [
        Dialect::JsonSchema,
        Dialect::Grammar,
        Dialect::JsonObject,
        Dialect::VllmStructured,
        Dialect::VllmGuided,
        Dialect::OllamaFormat,
        Dialect::PromptOnly,
    ];

    /// A short name (the HUD, the summary, `check --probe`).
    pub fn label(self) -> &'static str {
        match self {
            Dialect::Auto => "auto",
            Dialect::JsonSchema => "json_schema",
            Dialect::Grammar => "grammar (GBNF)",
            Dialect::JsonObject => "json_object+schema",
            Dialect::VllmStructured => "vllm structured_outputs",
            Dialect::VllmGuided => "vllm guided_grammar",
            Dialect::OllamaFormat => "ollama format",
            Dialect::PromptOnly => "prompt only",
        }
    }
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            name: "server".into(),
            endpoints: vec!["http://127.0.0.1:8080/v1".into()],
            model: "default".into(),
            embedding_model: None,
            api_key_env: None,
            dialect: Dialect::Auto,
            json_schema: None,
            concurrency: 8,
            affinity: true,
            slow_factor: 3.0,
            ca_file: None,
        }
    }
}

/// A sentence-transformers BERT model in-process (embeddings only).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BertConfig {
    /// Name for `embedding_backend`.
    pub name: String,
    /// The model folder (`config.json`, `tokenizer.json`, `model.safetensors`; relative paths
    /// are from the data folder).
    pub model: String,
    /// CPU threads (default: one; each text is a decode of its own).
    pub threads: Option<u32>,
    /// Most texts taken from the queue together (each still a decode of its own).
    pub batch: usize,
    /// Longest text in tokens (longer ones are cut).
    pub max_tokens: usize,
}

impl Default for BertConfig {
    fn default() -> Self {
        Self {
            name: "embedder".into(),
            model: "models/all-MiniLM-L6-v2".into(),
            threads: None,
            batch: 32,
            max_tokens: 256,
        }
    }
}

/// Scripted answers.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptedConfig {
    /// Name for routes.
    pub name: String,
    /// Rules, first match wins; unmatched requests get a valid default for their shape.
    pub rules: Vec<ScriptRule>,
    /// More rules from a RON file (a list of rules).
    pub file: Option<String>,
}

/// A scripted rule.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptRule {
    /// Matches this purpose only.
    pub purpose: Option<String>,
    /// Matches prompts containing this text only.
    pub contains: Option<String>,
    /// The answer.
    pub reply: String,
    /// Real milliseconds before the answer comes (a slow model, in tests).
    pub delay_ms: u64,
}

/// Replay of a recording.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplayConfig {
    /// Name for routes.
    pub name: String,
    /// The JSON-lines file written by `record`.
    pub file: String,
}

/// Seconds from the config as a duration: never a panic (a config that was not validated, as
/// tests build them, may hold anything); out of range is clamped to 0 to a day, not a number is 0.
pub fn seconds(s: f32) -> std::time::Duration {
    std::time::Duration::try_from_secs_f32(s.clamp(0.0, 86_400.0)).unwrap_or_default()
}

impl LlmConfig {
    /// In-process backends without a thread count get every core (headless runs draw nothing;
    /// the window keeps one core free instead).
    pub fn use_all_cores(&mut self) {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(2);
        for b in &mut self.backends {
            match b {
                BackendConfig::Llama(c) if c.threads.is_none() => c.threads = Some(cores),
                _ => {}
            }
        }
    }

    /// A config with one scripted backend (tests and model-free runs).
    pub fn scripted(rules: Vec<ScriptRule>) -> Self {
        Self {
            backends: vec![BackendConfig::Scripted(ScriptedConfig {
                name: "scripted".into(),
                rules,
                file: None,
            })],
            embedding_backend: None,
            ..Default::default()
        }
    }

    /// Checks the files the backends will read and write, as a run will need them: model
    /// files and folders, scripted rules and recordings to replay exist and can be read, and
    /// the recording (`record`) can be written. `check` and the headless commands call it
    /// before the first step, so no long run is made with a model that is not there or a
    /// recording that is never written.
    pub fn check_files(&self) -> Result<(), String> {
        use super::model_files::{check_model_dir, check_model_file, resolve_dir, resolve_model};
        for (i, b) in self.backends.iter().enumerate() {
            let at = |field: &str, e: String| format!("llm.backends[{i}].{field}: {e}");
            match b {
                BackendConfig::Llama(l) => {
                    check_model_file(&resolve_model(&l.model)).map_err(|e| at("model", e))?;
                    if let Some(m) = &l.embedding_model {
                        check_model_file(&resolve_model(m))
                            .map_err(|e| at("embedding_model", e))?;
                    }
                }
                BackendConfig::Bert(c) => {
                    check_model_dir(&resolve_dir(&c.model)).map_err(|e| at("model", e))?
                }
                BackendConfig::Scripted(c) => {
                    if let Some(f) = &c.file {
                        let p = crate::data::resolve_data("", f);
                        crate::data_error::read_ron::<Vec<ScriptRule>>(&p)
                            .map_err(|e| at("file", e.to_string()))?;
                    }
                }
                BackendConfig::Replay(c) => {
                    let p = crate::data::resolve_data("", &c.file);
                    let text = crate::data::read_bytes_bounded(&p, crate::data::MAX_TEXT_BYTES)
                        .map_err(|e| {
                            at(
                                "file",
                                format!("{}: cannot read the recording: {e}", p.display()),
                            )
                        })?;
                    super::model_files::read_recording(&text, &p).map_err(|e| at("file", e))?;
                }
                BackendConfig::OpenAi(o) => {
                    if let Some(f) = &o.ca_file {
                        let p = resolve_model(f);
                        let pem = crate::data::read_bounded(&p, 1024 * 1024)
                            .map_err(|e| at("ca_file", format!("{}: {e}", p.display())))?;
                        if !pem.contains("-----BEGIN CERTIFICATE-----") {
                            return Err(at(
                                "ca_file",
                                format!("{}: holds no PEM certificate", p.display()),
                            ));
                        }
                    }
                    if let Some(var) = &o.api_key_env
                        && std::env::var(var)
                            .map(|k| k.trim().is_empty())
                            .unwrap_or(true)
                    {
                        return Err(at(
                            "api_key_env",
                            format!(
                                "the variable {var} is not set: `export {var}=…` before starting, or remove api_key_env if the server needs no key"
                            ),
                        ));
                    }
                }
            }
        }
        if let Some(r) = &self.record {
            let p = Path::new(r);
            if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| {
                    format!("llm.record: {}: cannot make the folder: {e}", dir.display())
                })?;
            }
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| format!("llm.record: {r}: cannot be written: {e}"))?;
        }
        Ok(())
    }

    /// Checks names and numbers serde cannot.
    pub fn validate(&self, path: &Path, lines: &SourceLines) -> Result<(), DataError> {
        let line = |needle: &str| lines.line_near(needle, 0);
        if self.backends.is_empty() {
            return Err(DataError::new(
                path,
                line("backends"),
                "llm.backends",
                "at least one backend is needed",
            ));
        }
        let names: Vec<&str> = self.backends.iter().map(BackendConfig::name).collect();
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err(DataError::new(
                    path,
                    lines.line_of_quoted(n, 0),
                    format!("llm.backends[{i}].name"),
                    format!("backend name '{n}' is used twice"),
                ));
            }
        }
        for (purpose, b) in &self.routes {
            if !names.contains(&b.as_str()) {
                return Err(DataError::new(
                    path,
                    lines.line_of_quoted(b, 0),
                    format!("llm.routes.{purpose}"),
                    format!("no backend named '{b}' (have: {})", names.join(", ")),
                ));
            }
            if self
                .backends
                .iter()
                .any(|x| matches!(x, BackendConfig::Bert(c) if c.name == *b))
            {
                return Err(DataError::new(
                    path,
                    lines.line_of_quoted(b, 0),
                    format!("llm.routes.{purpose}"),
                    format!(
                        "'{b}' only makes embeddings; route chat purposes to a Llama, OpenAi, Scripted or Replay backend"
                    ),
                ));
            }
        }
        if let Some(BackendConfig::Bert(c)) = self.backends.first() {
            return Err(DataError::new(
                path,
                lines.line_of_quoted(&c.name, 0),
                "llm.backends[0]",
                "the first backend answers chat requests; a Bert backend only makes embeddings, so list it after a chat backend",
            ));
        }
        if let Some(b) = &self.embedding_backend
            && !names.contains(&b.as_str())
        {
            let only_servers = self
                .backends
                .iter()
                .all(|x| matches!(x, BackendConfig::OpenAi(_)));
            let way_out = if only_servers {
                format!(
                    ": write `embedding_backend: None` to take embeddings from the first backend ('{}'), or keep the bundled embedder by adding `Bert((name: \"{b}\"))` after your backends",
                    names[0]
                )
            } else {
                format!(" (have: {})", names.join(", "))
            };
            let at = lines.line_of_quoted(b, 0);
            return Err(DataError::new(
                path,
                if at > 1 { at } else { line("backends") },
                "llm.embedding_backend",
                format!("no backend named '{b}'{way_out}"),
            ));
        }
        // Seconds become durations on the router's thread: each is finite and in a range a
        // run can use (a day at most), so none can stop that thread.
        #[rustfmt::skip]
        let seconds = [
            ("timeout_s", self.timeout_s, 0.1, "seconds, 0.1 to 86400"),
            ("probe_after_s", self.probe_after_s, 0.0, "seconds, 0 to 86400"),
            ("slow_after_s", self.slow_after_s, 0.0, "seconds, 0 to 86400"),
        ];
        for (field, v, least, range) in seconds {
            if !(v.is_finite() && v >= least && v <= 86_400.0) {
                return Err(DataError::new(
                    path,
                    line(field),
                    format!("llm.{field}"),
                    format!("{v} is not {range}"),
                ));
            }
        }
        #[rustfmt::skip]
        let counts = [
            ("retries", self.retries as u64, 0, 20, "retries"),
            ("backoff_ms", self.backoff_ms, 0, 600_000, "milliseconds"),
            ("down_after", self.down_after as u64, 1, 1000, "failures"),
            ("cache_entries", self.cache_entries as u64, 0, 10_000_000, "answers"),
        ];
        for (field, v, least, most, unit) in counts {
            if !(least..=most).contains(&v) {
                return Err(DataError::new(
                    path,
                    line(field),
                    format!("llm.{field}"),
                    format!("{v} is not {least} to {most} {unit}"),
                ));
            }
        }
        for (i, b) in self.backends.iter().enumerate() {
            let at = lines.line_of_quoted(b.name(), 0);
            let bad = |field: &str, msg: String| {
                Err(DataError::new(
                    path,
                    at,
                    format!("llm.backends[{i}].{field}"),
                    msg,
                ))
            };
            match b {
                BackendConfig::OpenAi(o) => {
                    if let Some(m) = o.endpoints.iter().find_map(|e| super::endpoint::problem(e)) {
                        return bad("endpoints", m);
                    }
                    if !(1..=4096).contains(&o.concurrency) {
                        return bad(
                            "concurrency",
                            format!(
                                "{} is not 1 to 4096 requests in flight per endpoint",
                                o.concurrency
                            ),
                        );
                    }
                    if !(o.slow_factor.is_finite() && (0.0..=1000.0).contains(&o.slow_factor)) {
                        return bad(
                            "slow_factor",
                            format!(
                                "{} is not 0 (off) to 1000 times the fastest endpoint",
                                o.slow_factor
                            ),
                        );
                    }
                }
                BackendConfig::Llama(l) => {
                    if l.threads.is_some_and(|t| !(1..=1024).contains(&t)) {
                        return bad("threads", "must be 1 to 1024 CPU threads".into());
                    }
                    if !(1..=1024).contains(&l.slots) {
                        return bad("slots", format!("{} is not 1 to 1024 sequences", l.slots));
                    }
                    if !(512..=4_194_304).contains(&l.context) {
                        return bad(
                            "context",
                            format!("{} is not 512 to 4194304 tokens", l.context),
                        );
                    }
                    if !(1..=65_536).contains(&l.batch) {
                        return bad("batch", format!("{} is not 1 to 65536 tokens", l.batch));
                    }
                }
                BackendConfig::Bert(c) => {
                    if c.threads.is_some_and(|t| !(1..=1024).contains(&t)) {
                        return bad("threads", "must be 1 to 1024 CPU threads".into());
                    }
                    if !(1..=1024).contains(&c.batch) {
                        return bad("batch", format!("{} is not 1 to 1024 texts", c.batch));
                    }
                    if !(8..=512).contains(&c.max_tokens) {
                        return bad(
                            "max_tokens",
                            format!("{} is not 8 to 512 tokens", c.max_tokens),
                        );
                    }
                }
                BackendConfig::Scripted(c) => {
                    if let Some(r) = c.rules.iter().find(|r| r.delay_ms > 3_600_000) {
                        return bad(
                            "rules",
                            format!("delay_ms {} is more than an hour (3600000 ms)", r.delay_ms),
                        );
                    }
                }
                BackendConfig::Replay(_) => {}
            }
            match b {
                BackendConfig::OpenAi(o) if o.endpoints.is_empty() => {
                    return Err(DataError::new(
                        path,
                        lines.line_of_quoted(&o.name, 0),
                        format!("llm.backends[{i}].endpoints"),
                        "needs at least one endpoint URL",
                    ));
                }
                BackendConfig::Llama(l) if l.split_kv && l.context / l.slots < 512 => {
                    return Err(DataError::new(
                        path,
                        lines.line_of_quoted(&l.name, 0),
                        format!("llm.backends[{i}].context"),
                        format!(
                            "with split_kv each of the {} slots gets context / slots = {} tokens; give it at least 512 (context ≥ {})",
                            l.slots,
                            l.context / l.slots,
                            512 * l.slots
                        ),
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }
}
