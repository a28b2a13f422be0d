//! Prompts are data a researcher can edit: one template file per purpose under
//! `config/prompts/` (`<purpose>.txt`), with named slots such as `{{identity}}`. A template is
//! `#` comment lines, then messages, each opened by a line `=== system`, `=== user` or
//! `=== assistant`. Every template begins with the agent's fixed identity block, so the LLM
//! runtime's prefix cache reuses it across all of an agent's requests.
//!
//! Templates are loaded and checked at start (and by `simulacra check`): a missing file, an
//! unknown slot, a missing required slot or a template that does not begin with
//! `{{identity}}` is reported with the file and line, like a bad map.
//!
//! The helpers that fill slots live here too: the identity block ([`identity_block`]), numbered
//! lists ([`numbered`], [`numbered_found`]), one-line texts ([`one_line`]), list markers taken off a
//! model's lines ([`strip_list_marker`]) and the token budget of a choice ([`choice_tokens`]).

use crate::agent::{Outlook, Resident};
use crate::data_error::DataError;
use crate::llm::ChatMessage;
use bevy::prelude::Resource;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What a purpose's template may and must contain.
#[derive(Debug, Clone, Copy)]
pub struct PromptSpec {
    /// Purpose (the file name without `.txt`; also the LLM purpose label).
    pub name: &'static str,
    /// What it asks, for the file's documentation.
    pub about: &'static str,
    /// Slots it may use.
    pub slots: &'static [&'static str],
    /// Slots it must use (besides `identity`).
    pub required: &'static [&'static str],
    /// The slot up to whose end a rendered prompt opens the same resident's next prompt of this
    /// purpose too (a conversation's lines so far, which only grow): marked on its message
    /// ([`ChatMessage::stable`]) so a backend that keeps prompt prefixes may keep it.
    pub stable_through: Option<&'static str>,
}

/// Every prompt the game uses.
pub const SPECS: &[PromptSpec] = &[
    PromptSpec {
        name: "importance",
        about: "how poignant each new memory is for the agent, 1 to 10 (one number per memory, in order)",
        slots: &["identity", "name", "memories", "count"],
        required: &["memories"],
        stable_through: None,
    },
    PromptSpec {
        name: "reflect_questions",
        about: "the most salient high-level questions about the agent's recent memories",
        slots: &["identity", "name", "statements", "count"],
        required: &["statements"],
        stable_through: None,
    },
    PromptSpec {
        name: "reflect_insights",
        about: "insights that answer a question, each citing the numbers of the statements it rests on",
        slots: &["identity", "name", "question", "statements", "count"],
        required: &["statements"],
        stable_through: None,
    },
    PromptSpec {
        name: "revise_identity",
        about: "a new day: what the agent is up to now and what its days must include",
        slots: &["identity", "name", "date", "statements"],
        required: &["statements"],
        stable_through: None,
    },
    PromptSpec {
        name: "plan_day",
        about: "the wake-up hour and the day in broad strokes",
        slots: &["identity", "name", "date", "lifestyle", "commitments"],
        required: &["name"],
        stable_through: None,
    },
    PromptSpec {
        name: "plan_hours",
        about: "one activity for each hour of the day, chosen from the plan and the usual ones",
        slots: &[
            "identity",
            "name",
            "date",
            "plan",
            "options",
            "hours",
            "commitments",
        ],
        required: &["options", "hours"],
        stable_through: None,
    },
    PromptSpec {
        name: "decompose",
        about: "an hourly activity in 5–15-minute subtasks",
        slots: &[
            "identity", "name", "activity", "start", "end", "minutes", "schedule",
        ],
        required: &["activity"],
        stable_through: None,
    },
    PromptSpec {
        name: "choose_sector",
        about: "the area (sector) of town where an activity happens",
        slots: &[
            "identity",
            "name",
            "activity",
            "current",
            "current_arenas",
            "home",
            "home_arenas",
            "options",
        ],
        required: &["activity", "options"],
        stable_through: None,
    },
    PromptSpec {
        name: "choose_arena",
        about: "the room (arena) of the chosen area",
        slots: &["identity", "name", "activity", "sector", "options"],
        required: &["activity", "options"],
        stable_through: None,
    },
    PromptSpec {
        name: "act_details",
        about: "for each step of an activity: the object used, an emoji, and what the object does",
        slots: &["identity", "name", "place", "steps", "objects"],
        required: &["steps"],
        stable_through: None,
    },
    PromptSpec {
        name: "react",
        about: "on seeing someone: talk to them (yes/no), or else wait for them or carry on",
        slots: &[
            "identity",
            "name",
            "target",
            "time",
            "doing",
            "target_doing",
            "memories",
            "last_chat",
            "question",
        ],
        required: &["target", "question"],
        stable_through: None,
    },
    PromptSpec {
        name: "converse",
        about: "the next line of a conversation, and whether it ends",
        slots: &[
            "identity",
            "name",
            "partner",
            "partner_doing",
            "partner_note",
            "memories",
            "place",
            "conversation",
            "topics",
        ],
        required: &["partner", "conversation", "topics"],
        stable_through: Some("conversation"),
    },
    PromptSpec {
        name: "converse_whole",
        about: "a whole conversation between two residents, line by line (cognition.whole_dialogue)",
        slots: &[
            "identity",
            "name",
            "partner",
            "partner_about",
            "place",
            "note",
            "partner_note",
            "memories",
            "partner_memories",
            "topics",
            "max_lines",
        ],
        required: &["partner", "topics"],
        stable_through: None,
    },
    PromptSpec {
        name: "invite_answer",
        about: "whether to accept an invitation just given, what in the plan is in the way, and why",
        slots: &[
            "identity",
            "name",
            "asker",
            "invitation",
            "plan",
            "in_the_way",
            "memories",
            "earlier",
        ],
        required: &["invitation", "plan"],
        stable_through: None,
    },
    PromptSpec {
        name: "chat_memory",
        about: "what a finished conversation leaves: a summary, a planning thought, a memo, and what one now knows of the other",
        slots: &["identity", "name", "partner", "known", "conversation"],
        required: &["conversation"],
        stable_through: None,
    },
    PromptSpec {
        name: "interview",
        about: "an answer to an interviewer's question, in character, from the agent's memories",
        slots: &[
            "identity",
            "name",
            "persona",
            "memories",
            "conversation",
            "question",
        ],
        required: &["question"],
        stable_through: None,
    },
    PromptSpec {
        name: "probe",
        about: "a researcher's yes-or-no question (does the agent know of a fact, of a person), answered from the agent's memories with what it would say",
        slots: &["identity", "name", "memories", "question"],
        required: &["question"],
        stable_through: None,
    },
    PromptSpec {
        name: "judge",
        about: "which of two answers to an interview question is the more believable from this person (the lab's judge)",
        slots: &["identity", "about", "name", "question", "a", "b"],
        required: &["question", "a", "b"],
        stable_through: None,
    },
    PromptSpec {
        name: "replan",
        about: "the rest of the day re-planned after a strong new thought (a whispered inner voice, an invitation accepted)",
        slots: &[
            "identity",
            "name",
            "date",
            "thought",
            "schedule",
            "hours",
            "commitments",
        ],
        required: &["thought", "hours"],
        stable_through: None,
    },
    PromptSpec {
        name: "react_object",
        about: "whether and how the agent deals with an object in an unusual state it has noticed",
        slots: &[
            "identity", "name", "time", "doing", "object", "state", "place",
        ],
        required: &["object", "state"],
        stable_through: None,
    },
];

/// A piece of a message: literal text or a slot.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Slot(&'static str),
}

/// One loaded template.
#[derive(Debug, Clone)]
pub struct Template {
    /// The file it came from.
    pub file: PathBuf,
    messages: Vec<(String, Vec<Part>)>,
    /// Its spec's [`PromptSpec::stable_through`].
    stable_through: Option<&'static str>,
}

impl Template {
    /// The template's own words (every text between slots, the system message left out), so a
    /// model's answer that only echoes the prompt can be told from one that answers it.
    pub fn own_words(&self) -> Vec<String> {
        self.messages
            .iter()
            .filter(|(role, _)| role != "system")
            .flat_map(|(_, parts)| parts.iter())
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.trim().to_string()),
                Part::Slot(_) => None,
            })
            .filter(|t| !t.is_empty())
            .collect()
    }

    /// Fills the slots. A slot without a value is left empty.
    pub fn render(&self, values: &[(&str, &str)]) -> Vec<ChatMessage> {
        self.messages
            .iter()
            .map(|(role, parts)| {
                let mut s = String::new();
                let mut stable = None;
                for p in parts {
                    match p {
                        Part::Text(t) => s.push_str(t),
                        Part::Slot(name) => {
                            s.push_str(
                                values
                                    .iter()
                                    .find(|(k, _)| k == name)
                                    .map(|(_, v)| *v)
                                    .unwrap_or(""),
                            );
                            if self.stable_through == Some(*name) {
                                stable = Some(s.len());
                            }
                        }
                    }
                }
                ChatMessage {
                    role: role.clone(),
                    content: s,
                    stable,
                }
            })
            .collect()
    }
}

/// The importance scale's file in the prompts folder (`cognition.importance_by: Likeness`).
pub const SCALE_FILE: &str = "importance_scale.txt";

/// All templates, by purpose.
#[derive(Resource, Debug, Clone)]
pub struct Prompts {
    templates: HashMap<&'static str, Template>,
    /// The importance scale by example (`importance_scale.txt`), when the folder has one.
    scale: Option<crate::memory::importance::ImportanceScale>,
}

impl Prompts {
    /// Loads and checks every template from a folder.
    pub fn load(dir: &Path) -> Result<Self, DataError> {
        let mut templates = HashMap::new();
        for spec in SPECS {
            let file = dir.join(format!("{}.txt", spec.name));
            let text =
                crate::data::read_bounded(&file, crate::data::MAX_TEXT_BYTES).map_err(|e| {
                    DataError::new(
                        &file,
                        0,
                        "",
                        format!(
                            "cannot read the prompt template ({e}); every purpose needs one: {}",
                            SPECS.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
                        ),
                    )
                })?;
            templates.insert(spec.name, parse_template(&file, &text, spec)?);
        }
        let file = dir.join(SCALE_FILE);
        let scale = match file.exists() {
            false => None,
            true => {
                let text = crate::data::read_bounded(&file, crate::data::MAX_TEXT_BYTES)
                    .map_err(|e| DataError::new(&file, 0, "", format!("cannot read it ({e})")))?;
                Some(crate::memory::importance::ImportanceScale::parse(
                    &file, &text,
                )?)
            }
        };
        Ok(Self { templates, scale })
    }

    /// The importance scale by example, when the folder has one (`importance_scale.txt`).
    pub fn scale(&self) -> Option<&crate::memory::importance::ImportanceScale> {
        self.scale.as_ref()
    }

    /// The template of a purpose.
    pub fn get(&self, purpose: &str) -> &Template {
        self.templates.get(purpose).unwrap_or_else(|| {
            panic!("no prompt spec named {purpose} (a programming error: add it to SPECS)")
        })
    }

    /// Renders a purpose's template.
    pub fn render(&self, purpose: &str, values: &[(&str, &str)]) -> Vec<ChatMessage> {
        self.get(purpose).render(values)
    }

    /// Renders a template for `who`: its `identity` and `name` slots filled from `who`, then
    /// `slots` (a template names its slots, so their order does not matter).
    pub fn render_for(
        &self,
        template: &str,
        who: &Who,
        slots: &[(&str, &str)],
    ) -> Vec<ChatMessage> {
        let mut values = Vec::with_capacity(slots.len() + 2);
        values.push(("identity", who.identity.as_str()));
        values.push(("name", who.name));
        values.extend_from_slice(slots);
        self.render(template, &values)
    }
}

/// Parses one template file against its spec.
pub fn parse_template(file: &Path, text: &str, spec: &PromptSpec) -> Result<Template, DataError> {
    let err = |line: usize, field: &str, msg: String| DataError::new(file, line, field, msg);
    let mut messages: Vec<(String, Vec<Part>, usize)> = Vec::new();
    let mut used: Vec<&'static str> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if let Some(role) = line.strip_prefix("===") {
            let role = role.trim();
            if !matches!(role, "system" | "user" | "assistant") {
                return Err(err(
                    n,
                    "role",
                    format!(
                        "'=== {role}' is not a message start; write '=== system', '=== user' or '=== assistant'"
                    ),
                ));
            }
            messages.push((role.to_string(), Vec::new(), n));
            continue;
        }
        let Some((_, parts, _)) = messages.last_mut() else {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            return Err(err(n, "", "text before the first message; start a message with '=== system' or '=== user' (comment lines begin with #)".into()));
        };
        // Lines of a message are joined with newlines (leading blank lines are dropped).
        if !parts.is_empty() {
            parts.push(Part::Text("\n".into()));
        }
        let mut rest = line;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_string()));
            }
            let after = &rest[open + 2..];
            let close = after
                .find("}}")
                .ok_or_else(|| err(n, "slot", "'{{' without a closing '}}'".into()))?;
            let name = after[..close].trim();
            let Some(slot) = spec.slots.iter().find(|s| **s == name) else {
                return Err(err(
                    n,
                    "slot",
                    format!(
                        "unknown slot {{{{{name}}}}} in the '{}' prompt; it may use: {}",
                        spec.name,
                        spec.slots
                            .iter()
                            .map(|s| format!("{{{{{s}}}}}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                ));
            };
            parts.push(Part::Slot(slot));
            if !used.contains(slot) {
                used.push(slot);
            }
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
    }
    let Some((_, first, first_line)) = messages.first() else {
        return Err(err(0, "", "no messages; a template needs at least '=== system' with {{identity}} and a '=== user' message".into()));
    };
    let starts_with_identity = first
        .iter()
        .find(|p| !matches!(p, Part::Text(t) if t.trim().is_empty()))
        == Some(&Part::Slot("identity"));
    if !starts_with_identity {
        return Err(err(first_line + 1, "identity", "the first message must begin with {{identity}} (the agent's fixed identity block, so the prefix cache is reused)".into()));
    }
    for r in spec.required {
        if !used.contains(r) {
            return Err(err(
                0,
                "slot",
                format!("the '{}' prompt must use {{{{{r}}}}}", spec.name),
            ));
        }
    }
    // Trim a trailing newline of each message.
    let messages = messages
        .into_iter()
        .map(|(role, mut parts, _)| {
            while matches!(parts.last(), Some(Part::Text(t)) if t.trim().is_empty()) {
                parts.pop();
            }
            (role, parts)
        })
        .collect();
    Ok(Template {
        file: file.to_path_buf(),
        messages,
        stable_through: spec.stable_through,
    })
}

/// Whom a prompt is asked for: the identity block that opens it and the name its slots call
/// the resident by ([`Prompts::render_for`], [`Asker::chat`](super::asker::Asker::chat)).
pub struct Who<'a> {
    /// The identity block ([`identity_block`]).
    pub identity: String,
    /// The name the template's `name` slot takes.
    pub name: &'a str,
}

impl<'a> Who<'a> {
    /// A resident as it stands now.
    pub fn of(
        resident: &Resident,
        outlook: &Outlook,
        name: &'a str,
        now: crate::sim::time::GameTime,
    ) -> Self {
        Self {
            identity: identity_block(resident, outlook, now),
            name,
        }
    }
}

/// The identity block that opens every prompt of an agent (stable across its requests within
/// a day, so the prefix cache reuses it).
pub fn identity_block(
    resident: &Resident,
    outlook: &Outlook,
    now: crate::sim::time::GameTime,
) -> String {
    resident
        .persona
        .identity_header(&outlook.currently, &outlook.plan_requirement, now)
}

/// Tokens enough to write the longest of some options (a choice is written out in full).
pub fn choice_tokens(options: &[String]) -> u32 {
    options.iter().map(|o| o.len() as u32).max().unwrap_or(8) / 2 + 12
}

/// A numbered list, one item per line ("1. …").
pub fn numbered<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for (i, t) in items.into_iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = write!(out, "{}. ", i + 1);
        push_one_line(&mut out, t);
    }
    out
}

/// A model's line without a leading list marker ("1. ", "2) ", "- ", "* ").
pub fn strip_list_marker(s: &str) -> &str {
    let t = s.trim_start();
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    // "12. x" and "12) x" lose their number; "2023 was good" keeps it.
    let rest = if digits > 0 {
        t[digits..].strip_prefix(['.', ')']).unwrap_or(t)
    } else {
        t
    };
    let rest = rest
        .strip_prefix("- ")
        .or_else(|| rest.strip_prefix("* "))
        .unwrap_or(rest);
    rest.trim()
}

/// Retrieved memories as a numbered list of their descriptions, best first.
pub fn numbered_found(
    stream: &crate::memory::stream::MemoryStream,
    found: &[crate::memory::retrieve::Scored],
) -> String {
    numbered(
        found
            .iter()
            .filter_map(|s| stream.get(s.id))
            .map(|n| n.description.as_str()),
    )
}

/// A text on one line (line breaks become spaces), so it cannot break a prompt's layout.
pub fn one_line(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    push_one_line(&mut out, t);
    out
}

/// [`one_line`] written onto the end of `out`.
fn push_one_line(out: &mut String, t: &str) {
    for (i, w) in t.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: PromptSpec = PromptSpec {
        name: "importance",
        about: "",
        slots: &["identity", "name", "memories", "count"],
        required: &["memories"],
        stable_through: None,
    };

    #[test]
    fn parses_and_renders() {
        let text = "# comment\n# more\n=== system\n{{identity}}\n=== user\nRate {{count}} memories of {{ name }}:\n{{memories}}\n\n";
        let t = parse_template(Path::new("p.txt"), text, &SPEC).unwrap();
        let m = t.render(&[
            ("identity", "Name: A"),
            ("name", "A"),
            ("memories", "1. x"),
            ("count", "1"),
        ]);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0], ChatMessage::system("Name: A"));
        assert_eq!(m[1], ChatMessage::user("Rate 1 memories of A:\n1. x"));
        // A spec whose prompts open the next one up to a slot marks where that slot ends.
        let growing = PromptSpec {
            stable_through: Some("memories"),
            ..SPEC
        };
        let t = parse_template(Path::new("p.txt"), text, &growing).unwrap();
        let m = t.render(&[("identity", "Name: A"), ("memories", "1. x\n2. y")]);
        assert_eq!(m[0].stable, None);
        let at = m[1].stable.expect("the memories' end is marked");
        assert_eq!(&m[1].content[..at], "Rate  memories of :\n1. x\n2. y");
        // The mark is a hint: the message equals one with its text alone (a save keeps no mark).
        assert_eq!(m[1], ChatMessage::user(m[1].content.clone()));
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse_template(
            Path::new("p.txt"),
            "=== system\n{{identity}}\n=== user\n{{memories}} {{nope}}\n",
            &SPEC,
        )
        .unwrap_err();
        assert_eq!(e.line, 4);
        assert!(e.to_string().contains("unknown slot {{nope}}"), "{e}");
        let e = parse_template(
            Path::new("p.txt"),
            "=== system\n{{identity}}\n=== user\nno slot\n",
            &SPEC,
        )
        .unwrap_err();
        assert!(e.to_string().contains("must use {{memories}}"), "{e}");
        let e = parse_template(
            Path::new("p.txt"),
            "=== system\nHello {{identity}}\n=== user\n{{memories}}\n",
            &SPEC,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("must begin with {{identity}}"),
            "{e}"
        );
        let e = parse_template(
            Path::new("p.txt"),
            "=== system\n{{identity}}\n=== users\n",
            &SPEC,
        )
        .unwrap_err();
        assert_eq!(e.line, 3);
        let e = parse_template(Path::new("p.txt"), "hello\n=== system\n", &SPEC).unwrap_err();
        assert_eq!(e.line, 1);
        let e = parse_template(
            Path::new("p.txt"),
            "=== system\n{{identity}}\n=== user\n{{memories\n",
            &SPEC,
        )
        .unwrap_err();
        assert!(e.to_string().contains("closing"), "{e}");
    }

    #[test]
    fn list_markers_and_line_breaks_are_removed() {
        assert_eq!(
            strip_list_marker("1. Isabella likes tea"),
            "Isabella likes tea"
        );
        assert_eq!(strip_list_marker(" 12) x"), "x");
        assert_eq!(strip_list_marker("- a"), "a");
        assert_eq!(strip_list_marker("2023 was good"), "2023 was good");
        assert_eq!(one_line("a\nb\t c"), "a b c");
        assert_eq!(numbered(["a", "b\nc"]), "1. a\n2. b c");
    }
}
