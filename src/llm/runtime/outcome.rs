//! What becomes of a request's attempt: a validated answer (cached and recorded), a failure
//! (retried after a back-off, or moved to the local embedder), or the fail-safe.

use super::default_value;
use super::router::{InFlight, Retry, Router, cacheable, sink};
use super::{Reply, ReplySource};
use crate::llm::backend::{BackendError, ErrorKind, WorkDone, WorkKind, WorkOutcome};
use crate::llm::shape;
use crate::llm::types::{Embedding, LlmValue};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Router {
    pub(super) fn finish(&mut self, done: WorkDone) {
        if let Some(b) = self.backends.get_mut(done.backend) {
            b.observe(&done);
        }
        if !self.running[done.backend].remove(&done.id) {
            return; // cancelled or already timed out
        }
        let Some(job) = self.jobs.get_mut(&done.id) else {
            return;
        };
        let latency = job.started.map(|s| s.elapsed()).unwrap_or_default();
        let lat = &mut self.latency[done.backend];
        lat.push_back(latency);
        if lat.len() > 20 {
            lat.pop_front();
        }
        match done.outcome {
            WorkOutcome::Text {
                text,
                prompt_tokens,
                cached_tokens,
                gen_tokens,
                looped,
            } => {
                job.prompt_tokens += prompt_tokens;
                {
                    let mut st = sink(&self.sinks, job.client).stats.lock().unwrap();
                    let p = st.purpose(&job.sub.purpose);
                    p.prompt_tokens += prompt_tokens as u64;
                    p.cached_prompt_tokens += cached_tokens as u64;
                    p.gen_tokens += gen_tokens as u64;
                }
                let WorkKind::Chat {
                    shape: s, sampling, ..
                } = &*job.sub.kind
                else {
                    return;
                };
                // A server's answer is text from outside: no control character (a terminal's
                // escape sequence) goes on into memories, the console or files.
                let text = match crate::data::clean_text(&text) {
                    std::borrow::Cow::Owned(clean) => clean,
                    std::borrow::Cow::Borrowed(_) => text,
                };
                // An answer stopped going round in a loop, or one that does not fit its shape,
                // is a failed attempt, counted by its cause.
                let parsed = match looped {
                    Some(why) => Err((
                        true,
                        format!("stopped a loop after {gen_tokens} tokens ({why}): {text:?}"),
                        why,
                    )),
                    None => shape::parse(s, &text).map_err(|e| {
                        (
                            false,
                            format!("invalid answer {text:?}: {e}"),
                            e.to_string(),
                        )
                    }),
                };
                match parsed {
                    Ok(value) => {
                        let deterministic = sampling.deterministic() && job.attempts == 1;
                        let job = self.jobs.remove(&done.id).expect("present");
                        self.answer(job, value, text, deterministic);
                    }
                    Err((looped, message, why)) => {
                        {
                            let mut st = sink(&self.sinks, job.client).stats.lock().unwrap();
                            let p = st.purpose(&job.sub.purpose);
                            if looped {
                                p.loops_stopped += 1;
                            } else {
                                p.parse_failures += 1;
                            }
                        }
                        job.retry = Some(if looped {
                            Retry::Loop(why)
                        } else {
                            Retry::Shape(why)
                        });
                        self.failed(done.id, BackendError::new(ErrorKind::Malformed, message));
                    }
                }
            }
            WorkOutcome::Vector {
                vector,
                model,
                prompt_tokens,
            } => {
                // One check for every backend: a vector a save could not be read back with is
                // not taken.
                if let Some(problem) = crate::llm::types::vector_problem(&vector) {
                    self.failed(
                        done.id,
                        BackendError::new(ErrorKind::Malformed, format!("embedding: {problem}")),
                    );
                    return;
                }
                sink(&self.sinks, job.client)
                    .stats
                    .lock()
                    .unwrap()
                    .purpose(&job.sub.purpose)
                    .prompt_tokens += prompt_tokens as u64;
                if done.backend == self.embed_backend {
                    let mut current = self.embedding_model.lock().unwrap();
                    if *current != model {
                        *current = model.clone();
                    }
                }
                let job = self.jobs.remove(&done.id).expect("present");
                self.answer(
                    job,
                    LlmValue::Embedding(Embedding::unit(&model, vector)),
                    String::new(),
                    true,
                );
            }
            WorkOutcome::Failed(e) => self.failed(done.id, e),
        }
    }

    fn answer(&mut self, job: InFlight, value: LlmValue, text: String, cacheable_now: bool) {
        let latency = job.submitted.elapsed();
        let to = sink(&self.sinks, job.client).clone();
        to.stats
            .lock()
            .unwrap()
            .purpose(&job.sub.purpose)
            .record_latency(latency);
        if self.config.cache && cacheable_now && cacheable(&job.sub.kind) {
            let ck = self.cache_key(job.backend, &job.key);
            if self
                .cache
                .insert(ck.clone(), (value.clone(), text.clone()))
                .is_none()
            {
                self.cache_order.push_back(ck);
                while self.cache_order.len() > self.config.cache_entries {
                    if let Some(old) = self.cache_order.pop_front() {
                        self.cache.remove(&old);
                    }
                }
            }
        }
        if self.recorder.is_some() {
            let line = match &value {
                LlmValue::Embedding(e) => {
                    serde_json::json!({"key": job.key, "purpose": job.sub.purpose, "vector": &*e.vector, "model": e.model})
                }
                _ => serde_json::json!({"key": job.key, "purpose": job.sub.purpose, "text": text}),
            };
            self.record(&line);
        }
        // Those that waited on it take the same answer, as from the cache.
        for (sub, client) in self.take_followers(&job) {
            let to = sink(&self.sinks, client);
            to.stats.lock().unwrap().purpose(&sub.purpose).cache_hits += 1;
            let _ = to.replies.send(Reply {
                id: sub.id,
                agent: sub.agent,
                purpose: sub.purpose,
                value: value.clone(),
                text: text.clone(),
                source: ReplySource::Cache,
                latency: Duration::ZERO,
            });
        }
        let source = ReplySource::Model(self.backends[job.backend].name().to_string());
        let _ = to.replies.send(Reply {
            id: job.sub.id,
            agent: job.sub.agent,
            purpose: job.sub.purpose,
            value,
            text,
            source,
            latency,
        });
    }

    pub(super) fn failed(&mut self, id: u64, err: BackendError) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        if err.kind == ErrorKind::Unsupported && matches!(*job.sub.kind, WorkKind::Embed { .. }) {
            let from = job.backend;
            if from == self.embed_backend {
                self.switch_embedder(&err.message);
            }
            if self.embed_backend != from
                && let Some(job) = self.jobs.get_mut(&id)
            {
                // Not a failure of this request: it moves to the embedder that can do it.
                job.backend = self.embed_backend;
                job.attempts = 0;
                job.started = None;
                job.cancelled = Arc::default();
                let (b, p) = (job.backend, job.sub.priority);
                self.enqueue(b, id, p);
                return;
            }
        }
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let attempts = job.attempts;
        let stats = &sink(&self.sinks, job.client).stats;
        {
            let mut st = stats.lock().unwrap();
            let p = st.purpose(&job.sub.purpose);
            p.failures += 1;
            p.last_error = Some(err.message.clone());
        }
        if err.retryable() && attempts <= self.config.retries {
            {
                let mut st = stats.lock().unwrap();
                let p = st.purpose(&job.sub.purpose);
                p.retries += 1;
                match &job.retry {
                    Some(Retry::Loop(_)) if err.kind == ErrorKind::Malformed => {
                        p.retries_after_loop += 1
                    }
                    Some(Retry::Shape(_)) if err.kind == ErrorKind::Malformed => {
                        p.retries_after_shape += 1
                    }
                    _ => {}
                }
            }
            let backoff = Duration::from_millis(
                self.config
                    .backoff_ms
                    .saturating_mul(1 << attempts.saturating_sub(1).min(10)),
            );
            self.delayed.push((Instant::now() + backoff, id));
            if let Some(j) = self.jobs.get_mut(&id) {
                j.started = None;
                if err.kind != ErrorKind::Malformed {
                    j.retry = Some(Retry::Backend);
                }
            }
            return;
        }
        let job = self.jobs.remove(&id).expect("present");
        // Given up on: recorded as that failure, so that a replay fails it the same way (and
        // does not count it as a request missing from the recording).
        if self.recorder.is_some() {
            let line = serde_json::json!({"key": job.key, "purpose": job.sub.purpose, "failed": err.message});
            self.record(&line);
        }
        self.fallback(job, err.message);
    }

    /// Appends one line to the recording.
    fn record(&mut self, line: &serde_json::Value) {
        if let Some(f) = self.recorder.as_mut() {
            // One write of the whole line: two runs recording to one file (opened to append)
            // interleave lines, never the bytes of one.
            let mut bytes = line.to_string().into_bytes();
            bytes.push(b'\n');
            let _ = f.write_all(&bytes);
        }
    }

    /// The embedding backend has no embeddings: says so once, and the local embedder (if one is
    /// configured) makes them from now on.
    fn switch_embedder(&mut self, why: &str) {
        if self.embedder_told {
            return;
        }
        self.embedder_told = true;
        let from = self.backends[self.embed_backend].name().to_string();
        match self.embed_fallback.take() {
            Some(to) => {
                self.embed_backend = to;
                let model = self.backends[to].embedding_model_id();
                eprintln!(
                    "llm: backend '{from}' makes no embeddings ({why}); embeddings now come from '{}' ({model})",
                    self.backends[to].name()
                );
                *self.embedding_model.lock().unwrap() = model;
            }
            None => eprintln!(
                "llm: backend '{from}' makes no embeddings ({why}) and no local embedder is configured (add a Bert backend): memories are retrieved by recency and importance only"
            ),
        }
    }

    pub(super) fn fallback(&mut self, job: InFlight, reason: String) {
        // Those that waited on it fare as it did (the same request of the same backend).
        for (sub, client) in self.take_followers(&job) {
            let mut follower = InFlight::new(sub, client, job.backend, job.key.clone());
            follower.submitted = job.submitted;
            self.fallback(follower, reason.clone());
        }
        let to = sink(&self.sinks, job.client);
        to.stats.lock().unwrap().purpose(&job.sub.purpose).fallbacks += 1;
        let value = job
            .sub
            .fallback
            .clone()
            .unwrap_or_else(|| default_value(&job.sub.kind));
        let _ = to.replies.send(Reply {
            id: job.sub.id,
            agent: job.sub.agent,
            purpose: job.sub.purpose,
            value,
            text: String::new(),
            source: ReplySource::Fallback(reason),
            latency: job.submitted.elapsed(),
        });
    }
}
