//! The console's language: one command per line, parsed into a [`Command`] or a one-line error
//! saying what was expected. Names are resolved against the people of the town by
//! [`resolve_name`] (case-insensitive; a unique prefix of the full name or of a later word works).
//! Pure functions: the game's console, `simulacra run --commands` and the tests share them.

use crate::memory::stream::NodeKind;
use std::path::PathBuf;

/// Longest console line or chat line taken; longer ones are cut (with a notice).
pub const MAX_INPUT_CHARS: usize = 300;

/// A parsed console command. Names and free text are still raw here; names are resolved when the
/// command runs (the people of the town are known then).
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Advance this many steps.
    Run(u64),
    /// Stop game time.
    Pause,
    /// Let game time run again.
    Resume,
    /// Set the speed multiple (0 = as fast as the frame allows).
    Speed(u32),
    /// A person's plan for the day.
    PrintSchedule(String),
    /// A person's memories, optionally of one kind.
    PrintMemory(String, Option<NodeKind>),
    /// The places a person knows.
    PrintSpatial(String),
    /// The game time and step.
    PrintTime,
    /// What is at a tile.
    PrintTile(i32, i32),
    /// An inner voice: `whisper <name> <text>` (name and text still joined).
    Whisper(String),
    /// Open an interview: (name, persona).
    Interview(String, String),
    /// Ask the open interview a question.
    Ask(String),
    /// Close the open interview.
    EndInterview,
    /// Write the last interview's transcript to a file.
    SaveTranscript(PathBuf),
    /// Set an object's state: (address, state).
    Set(String, String),
    /// Load a history CSV.
    LoadHistory(PathBuf),
    /// Walk the avatar up to someone.
    Goto(String),
    /// Start talking with someone near the avatar.
    Talk(String),
    /// Say a line in the conversation the avatar is in.
    Say(String),
    /// Leave the conversation.
    Bye,
    /// The list of commands.
    Help,
    /// Save the simulation (a name, or one made from the scenario and step).
    Save(Option<String>),
    /// Load a save of this scenario.
    Load(String),
    /// Copy a save under a new name: (from, to).
    Fork(String, String),
    /// List the saves.
    Saves,
}

/// The commands, one line each (for `help` and the help overlay).
pub const HELP: &[(&str, &str)] = &[
    ("run N", "advance N steps (10 game seconds each by default)"),
    ("pause / resume", "stop or restart game time"),
    (
        "speed X",
        "game speed: 1, 2, 4 … 64, or 0 for as fast as possible",
    ),
    ("print schedule <name>", "the person's plan for today"),
    (
        "print memory <name> [event|thought|chat]",
        "the person's newest memories",
    ),
    ("print spatial <name>", "the places the person knows"),
    ("print time", "the game time and step"),
    (
        "print tile X Y",
        "the place, object, state and people at a tile",
    ),
    (
        "whisper <name> <text>",
        "an inner voice: a strong thought that makes the person re-plan the day",
    ),
    (
        "interview <name> as <persona>",
        "open an interview (nothing is written to the person's memory)",
    ),
    ("ask <question>", "ask the open interview a question"),
    ("end", "close the interview"),
    (
        "transcript <file>",
        "save the last interview's questions and answers",
    ),
    (
        "set <world:sector:arena:object> <state>",
        "set an object's state, e.g. set <the Ville:Hobbs Cafe:cafe:kitchen sink> is leaking",
    ),
    (
        "load history <csv>",
        "give people memories from a history file",
    ),
    ("goto <name>", "walk up to someone"),
    (
        "talk <name>",
        "start a conversation with someone near you (or press T)",
    ),
    ("say <text>", "say a line in your conversation"),
    ("bye", "leave your conversation"),
    (
        "save [name]",
        "save the simulation (saves/<name>/; no name: scenario and step)",
    ),
    (
        "load <name>",
        "continue a save of this scenario (`latest`: the newest)",
    ),
    (
        "fork <save> <new name>",
        "copy a save to try another course from it",
    ),
    ("saves", "list the saves"),
    ("help", "this list"),
];

/// The help text, one command per line.
pub fn help_text() -> String {
    HELP.iter()
        .map(|(c, what)| format!("{c:<42} {what}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Player text made safe to keep and to put in a prompt: control characters become spaces, runs
/// of blanks one space, and at most [`MAX_INPUT_CHARS`] characters are kept. The second value
/// says whether it was cut.
pub fn clean_text(text: &str) -> (String, bool) {
    let mut out = String::with_capacity(text.len().min(MAX_INPUT_CHARS * 4));
    let mut n = 0;
    let mut cut = false;
    let mut blank = true;
    for c in text.chars() {
        let c = if c.is_control() || c.is_whitespace() {
            ' '
        } else {
            c
        };
        if c == ' ' {
            if blank {
                continue;
            }
            blank = true;
        } else {
            blank = false;
        }
        if n == MAX_INPUT_CHARS {
            cut = true;
            break;
        }
        out.push(c);
        n += 1;
    }
    (out.trim_end().to_string(), cut)
}

/// Parses one line. Blank lines and `#` comments are `Ok(None)`.
pub fn parse(line: &str) -> Result<Option<Command>, String> {
    let (line, _) = clean_text(line);
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let (head, rest) = split_word(line);
    let rest = rest.trim();
    let need = |what: &str| Err(format!("expected: {what}"));
    let cmd = match head.to_lowercase().as_str() {
        "run" => match rest.parse::<u64>() {
            Ok(n) if n > 0 && n <= 1_000_000 => Command::Run(n),
            _ => return need("run N (a number of steps from 1 to 1000000)"),
        },
        "pause" if rest.is_empty() => Command::Pause,
        "resume" | "play" if rest.is_empty() => Command::Resume,
        "speed" => match rest.trim_end_matches(['x', 'X']).parse::<u32>() {
            Ok(n) if n <= 64 => Command::Speed(n),
            _ => return need("speed X (1, 2, 4 … 64, or 0 for as fast as possible)"),
        },
        "print" => {
            let (what, arg) = split_word(rest);
            let arg = arg.trim();
            match what.to_lowercase().as_str() {
                "schedule" if !arg.is_empty() => Command::PrintSchedule(arg.into()),
                "spatial" if !arg.is_empty() => Command::PrintSpatial(arg.into()),
                "time" if arg.is_empty() => Command::PrintTime,
                "memory" if !arg.is_empty() => {
                    let (name, kind) = match arg.rsplit_once(' ') {
                        Some((n, k)) => match kind_named(k) {
                            Some(kind) => (n.trim(), Some(kind)),
                            None => (arg, None),
                        },
                        None => (arg, None),
                    };
                    Command::PrintMemory(name.into(), kind)
                }
                "tile" => {
                    let nums: Vec<Option<i32>> =
                        arg.split_whitespace().map(|s| s.parse().ok()).collect();
                    match nums.as_slice() {
                        [Some(x), Some(y)] => Command::PrintTile(*x, *y),
                        _ => return need("print tile X Y (two whole numbers)"),
                    }
                }
                _ => {
                    return need(
                        "print schedule <name> | print memory <name> [event|thought|chat] | print spatial <name> | print time | print tile X Y",
                    );
                }
            }
        }
        "whisper" if rest.split_whitespace().count() >= 2 => Command::Whisper(rest.into()),
        "whisper" => return need("whisper <name> <text>"),
        "interview" => match rest.to_lowercase().find(" as ") {
            Some(i) if i > 0 && !rest[i + 4..].trim().is_empty() => {
                Command::Interview(rest[..i].trim().into(), rest[i + 4..].trim().into())
            }
            _ => {
                return need(
                    "interview <name> as <persona> (e.g. interview isabella as a news reporter)",
                );
            }
        },
        "ask" if !rest.is_empty() => Command::Ask(rest.into()),
        "ask" => return need("ask <question>"),
        "end" if rest.is_empty() || rest.eq_ignore_ascii_case("interview") => Command::EndInterview,
        "transcript" if !rest.is_empty() => Command::SaveTranscript(PathBuf::from(rest)),
        "transcript" => return need("transcript <file>"),
        "set" => {
            let Some(body) = rest.strip_prefix('<') else {
                return need(
                    "set <world:sector:arena:object> <state> (the address in angle brackets)",
                );
            };
            let Some((addr, state)) = body.split_once('>') else {
                return need("set <world:sector:arena:object> <state> (no closing '>')");
            };
            let state = state.trim();
            let state = state
                .strip_prefix("is ")
                .or_else(|| state.strip_prefix("Is "))
                .unwrap_or(state)
                .trim();
            if addr.trim().is_empty() || state.is_empty() || addr.contains('<') {
                return need(
                    "set <world:sector:arena:object> <state>, e.g. set <the Ville:Hobbs Cafe:cafe:kitchen sink> is leaking",
                );
            }
            Command::Set(addr.trim().into(), state.into())
        }
        "load" => {
            let (what, file) = split_word(rest);
            if what.eq_ignore_ascii_case("history") && !file.trim().is_empty() {
                Command::LoadHistory(PathBuf::from(file.trim()))
            } else if !what.is_empty()
                && file.trim().is_empty()
                && !what.eq_ignore_ascii_case("history")
            {
                Command::Load(what.to_string())
            } else {
                return need("load <save name> or load history <file.csv>");
            }
        }
        "save" => match rest.split_whitespace().count() {
            0 => Command::Save(None),
            1 => Command::Save(Some(rest.to_string())),
            _ => return need("save [name] (one word: letters, digits, '-', '_', '.')"),
        },
        "fork" => match rest.split_whitespace().collect::<Vec<_>>()[..] {
            [from, to] => Command::Fork(from.into(), to.into()),
            _ => return need("fork <save> <new name>"),
        },
        "saves" if rest.is_empty() => Command::Saves,
        "goto" if !rest.is_empty() => Command::Goto(rest.into()),
        "goto" => return need("goto <name>"),
        "talk" if !rest.is_empty() => Command::Talk(rest.into()),
        "talk" => return need("talk <name>"),
        "say" if !rest.is_empty() => Command::Say(rest.into()),
        "say" => return need("say <text>"),
        "bye" if rest.is_empty() => Command::Bye,
        "help" | "?" => Command::Help,
        _ => {
            let shown: String = head.chars().take(30).collect();
            return Err(format!(
                "unknown command '{shown}'; commands: run, pause, resume, speed, print, whisper, interview, ask, end, transcript, set, load history, goto, talk, say, bye, help"
            ));
        }
    };
    Ok(Some(cmd))
}

fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

fn kind_named(k: &str) -> Option<NodeKind> {
    match k.to_lowercase().as_str() {
        "event" | "events" => Some(NodeKind::Event),
        "thought" | "thoughts" => Some(NodeKind::Thought),
        "chat" | "chats" => Some(NodeKind::Chat),
        _ => None,
    }
}

/// The person a (partial) name means: a full name, or a unique prefix of the full name or of one
/// of its later words ("isabella", "rodriguez", "isa"), ignoring case.
pub fn resolve_name<'a>(query: &str, names: &'a [String]) -> Result<&'a str, String> {
    let q = query.trim().trim_matches('"').trim().to_lowercase();
    if q.is_empty() {
        return Err("expected a name".into());
    }
    if let Some(n) = names.iter().find(|n| n.to_lowercase() == q) {
        return Ok(n);
    }
    let hits: Vec<&String> = names
        .iter()
        .filter(|n| {
            let low = n.to_lowercase();
            low.starts_with(&q)
                || low
                    .match_indices(' ')
                    .any(|(i, _)| low[i + 1..].starts_with(&q))
        })
        .collect();
    match hits.as_slice() {
        [one] => Ok(one),
        [] => {
            let shown: String = query.chars().take(40).collect();
            Err(format!(
                "no one here is called '{shown}' (people: {})",
                names.iter().take(6).cloned().collect::<Vec<_>>().join(", ")
                    + if names.len() > 6 { ", …" } else { "" }
            ))
        }
        many => Err(format!(
            "'{}' could be {}; say more of the name",
            query.trim(),
            many.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(" or ")
        )),
    }
}

/// A name followed by text ("isabella rodriguez you will run for mayor", or with a colon after
/// the name): the longest leading run of words that names one person, and the rest.
pub fn split_name<'a>(line: &str, names: &'a [String]) -> Result<(&'a str, String), String> {
    if let Some((n, text)) = line.split_once(':')
        && !text.trim().is_empty()
        && let Ok(name) = resolve_name(n, names)
    {
        return Ok((name, text.trim().to_string()));
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    for k in (1..words.len()).rev() {
        if let Ok(name) = resolve_name(&words[..k].join(" "), names) {
            return Ok((name, words[k..].join(" ")));
        }
    }
    resolve_name(words.first().copied().unwrap_or(""), names)
        .and_then(|_| Err("expected a text after the name".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        [
            "Isabella Rodriguez",
            "Maria Lopez",
            "Klaus Mueller",
            "Tom Moreno",
            "Mei Lin",
            "John Lin",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    #[test]
    fn commands_parse_and_bad_ones_say_what_was_expected() {
        assert_eq!(parse("run 30"), Ok(Some(Command::Run(30))));
        assert_eq!(parse("  "), Ok(None));
        assert_eq!(parse("# a comment"), Ok(None));
        assert_eq!(
            parse("print memory isabella thought"),
            Ok(Some(Command::PrintMemory(
                "isabella".into(),
                Some(NodeKind::Thought)
            )))
        );
        assert_eq!(
            parse("print memory isabella rodriguez"),
            Ok(Some(Command::PrintMemory(
                "isabella rodriguez".into(),
                None
            )))
        );
        assert_eq!(parse("PRINT TILE 3 4"), Ok(Some(Command::PrintTile(3, 4))));
        assert_eq!(
            parse("interview Isabella as a news reporter"),
            Ok(Some(Command::Interview(
                "Isabella".into(),
                "a news reporter".into()
            )))
        );
        assert_eq!(
            parse("set <the Ville:Hobbs Cafe:cafe:stove> is burning"),
            Ok(Some(Command::Set(
                "the Ville:Hobbs Cafe:cafe:stove".into(),
                "burning".into()
            )))
        );
        assert_eq!(parse("speed 4x"), Ok(Some(Command::Speed(4))));
        for bad in [
            "run",
            "run -3",
            "run many",
            "speed fast",
            "print",
            "print tile 3",
            "whisper isabella",
            "interview isabella",
            "set the Ville:x burning",
            "set <the Ville:x burning",
            "set <> burning",
            "load history",
            "fly away",
            "say",
        ] {
            let e = parse(bad).expect_err(bad);
            assert!(!e.contains('\n'), "one line: {e}");
            assert!(e.len() < 300, "{e}");
        }
    }

    #[test]
    fn names_match_by_unique_prefix_of_any_word() {
        let n = names();
        assert_eq!(resolve_name("isabella", &n), Ok("Isabella Rodriguez"));
        assert_eq!(resolve_name("RODRIGUEZ", &n), Ok("Isabella Rodriguez"));
        assert_eq!(resolve_name("mei lin", &n), Ok("Mei Lin"));
        assert!(
            resolve_name("lin", &n)
                .unwrap_err()
                .contains("Mei Lin or John Lin")
        );
        assert!(
            resolve_name("m", &n).is_err(),
            "Maria, Mei, Mueller, Moreno"
        );
        assert!(resolve_name("nobody", &n).unwrap_err().contains("no one"));
        assert_eq!(
            split_name("isabella rodriguez you will run for mayor", &n),
            Ok(("Isabella Rodriguez", "you will run for mayor".into()))
        );
        assert_eq!(
            split_name("tom: the cafe is on fire", &n),
            Ok(("Tom Moreno", "the cafe is on fire".into()))
        );
        assert!(split_name("tom", &n).is_err());
        assert!(split_name("zed hello", &n).is_err());
    }

    #[test]
    fn player_text_is_cleaned_and_cut() {
        let (t, cut) = clean_text("hi\u{0}\u{7}there\n\n  you");
        assert_eq!((t.as_str(), cut), ("hi there you", false));
        let (t, cut) = clean_text(&"é".repeat(1000));
        assert_eq!((t.chars().count(), cut), (MAX_INPUT_CHARS, true));
    }
}
