//! Replays a recording (the JSON-lines file the runtime writes with `record`): the same
//! requests get the same answers in the same order (and a request the recorded run gave up on
//! fails again), so a whole run can be reproduced without a model. A request that is not in
//! the recording fails (and falls back), and is counted as a miss.

use super::{Backend, BackendError, ErrorKind, Health, Work, WorkDone, WorkOutcome, work_key};
use crate::llm::config::ReplayConfig;
use crate::llm::model_files::Recorded;
use crossbeam_channel::Sender;
use std::collections::{HashMap, VecDeque};

#[derive(Clone)]
enum Entry {
    Text(String),
    Vector(Vec<f32>, String),
    Failed(String),
}

/// Answers from a recording.
pub struct ReplayBackend {
    index: usize,
    name: String,
    entries: HashMap<String, VecDeque<Entry>>,
    last: HashMap<String, Entry>,
    error: Option<String>,
    misses: u64,
    /// The model of the recording's first embedding: the identity its vectors carry from the
    /// start, as they did when recorded.
    embedding_model: Option<String>,
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
            embedding_model: None,
        };
        let text = match crate::data::read_bytes_bounded(&path, crate::data::MAX_TEXT_BYTES) {
            Ok(t) => t,
            Err(e) => {
                me.error = Some(format!(
                    "fatal: cannot read recording {}: {e}",
                    path.display()
                ));
                return me;
            }
        };
        match crate::llm::model_files::read_recording(&text, &path) {
            Ok((answers, note)) => {
                if let Some(note) = note {
                    eprintln!("llm replay: {note}");
                }
                for (key, answer) in answers {
                    let entry = match answer {
                        Recorded::Text(t) => Entry::Text(t),
                        Recorded::Vector(v, model) => {
                            if me.embedding_model.is_none() {
                                me.embedding_model = Some(model.clone());
                            }
                            Entry::Vector(v, model)
                        }
                        Recorded::Failed(why) => Entry::Failed(why),
                    };
                    me.entries.entry(key).or_default().push_back(entry);
                }
            }
            Err(e) => me.error = Some(format!("fatal: {e}")),
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
    fn embedding_model_id(&self) -> String {
        self.embedding_model
            .clone()
            .unwrap_or_else(|| self.model_id())
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
                    // Given up on when recorded: given up on again (not retried).
                    Entry::Failed(why) => WorkOutcome::Failed(BackendError::new(
                        ErrorKind::Fatal,
                        if why.starts_with("as recorded: ") {
                            why
                        } else {
                            format!("as recorded: {why}")
                        },
                    )),
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
