//! Replays a recording (the JSON-lines file the runtime writes with `record`): the same
//! requests get the same answers in the same order, so a whole run can be reproduced without
//! a model. A request that is not in the recording fails (and falls back), and is counted.

use super::{Backend, BackendError, ErrorKind, Health, Work, WorkDone, WorkOutcome, work_key};
use crate::llm::config::ReplayConfig;
use crossbeam_channel::Sender;
use std::collections::{HashMap, VecDeque};

#[derive(Clone)]
enum Entry {
    Text(String),
    Vector(Vec<f32>, String),
}

/// Answers from a recording.
pub struct ReplayBackend {
    index: usize,
    name: String,
    entries: HashMap<String, VecDeque<Entry>>,
    last: HashMap<String, Entry>,
    error: Option<String>,
    misses: u64,
}

impl ReplayBackend {
    /// Loads a recording.
    pub fn load(index: usize, c: &ReplayConfig) -> Self {
        let name = if c.name.is_empty() {
            "replay".to_string()
        } else {
            c.name.clone()
        };
        let path = crate::data::resolve_data("", &c.file);
        let mut me = Self {
            index,
            name,
            entries: HashMap::new(),
            last: HashMap::new(),
            error: None,
            misses: 0,
        };
        let text = match crate::data::read_bounded(&path, crate::data::MAX_TEXT_BYTES) {
            Ok(t) => t,
            Err(e) => {
                me.error = Some(format!(
                    "fatal: cannot read recording {}: {e}",
                    path.display()
                ));
                return me;
            }
        };
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let v: serde_json::Value = match serde_json::from_str(line) {
                Ok(v) => v,
                Err(e) => {
                    me.error = Some(format!(
                        "fatal: {}:{}: not a JSON line: {e}",
                        path.display(),
                        n + 1
                    ));
                    return me;
                }
            };
            let key = v["key"].as_str().unwrap_or_default().to_string();
            let entry = if let Some(t) = v["text"].as_str() {
                Entry::Text(t.to_string())
            } else if let Some(vec) = v["vector"].as_array() {
                Entry::Vector(
                    vec.iter()
                        .filter_map(|x| x.as_f64().map(|f| f as f32))
                        .collect(),
                    v["model"].as_str().unwrap_or_default().to_string(),
                )
            } else {
                me.error = Some(format!(
                    "fatal: {}:{}: field `text` or `vector` is missing",
                    path.display(),
                    n + 1
                ));
                return me;
            };
            me.entries.entry(key).or_default().push_back(entry);
        }
        me
    }

    /// Requests that were not in the recording.
    pub fn misses(&self) -> u64 {
        self.misses
    }
}

impl Backend for ReplayBackend {
    fn name(&self) -> &str {
        &self.name
    }
    fn model_id(&self) -> String {
        format!("replay:{}", self.name)
    }
    fn capacity(&self) -> usize {
        64
    }
    fn start(&mut self, work: Work, done: Sender<WorkDone>) {
        let key = work_key(&work.kind);
        // In order; once a key's answers are used up, the last one repeats (the cache may
        // have answered some of the original run's duplicates).
        let entry = self
            .entries
            .get_mut(&key)
            .and_then(VecDeque::pop_front)
            .or_else(|| self.last.get(&key).cloned());
        let outcome = match entry {
            Some(e) => {
                self.last.insert(key, e.clone());
                match e {
                    Entry::Text(text) => WorkOutcome::Text {
                        text,
                        prompt_tokens: 0,
                        cached_tokens: 0,
                        gen_tokens: 0,
                        looped: None,
                    },
                    Entry::Vector(vector, model) => WorkOutcome::Vector {
                        vector,
                        model,
                        prompt_tokens: 0,
                    },
                }
            }
            None => {
                self.misses += 1;
                WorkOutcome::Failed(BackendError::new(
                    ErrorKind::Fatal,
                    "request not in the recording",
                ))
            }
        };
        let _ = done.send(WorkDone {
            id: work.id,
            backend: self.index,
            endpoint: None,
            outcome,
        });
    }
    fn health(&self) -> (Health, String) {
        match &self.error {
            Some(e) => (Health::Down, e.clone()),
            None => (
                Health::Ok,
                format!(
                    "{} recorded requests, {} misses",
                    self.entries.len(),
                    self.misses
                ),
            ),
        }
    }
}
