//! History files in the original project's format (`agent_history_init_n25.csv`): a header
//! `Name,Whisper`, then one row per person whose second column holds statements separated by
//! semicolons, written to the person ("you have a crush on Klaus Mueller"). Quoted fields
//! (with commas, doubled quotes and line breaks inside), stray spaces, empty cells and a
//! trailing semicolon are all accepted. Rows naming someone not in the scenario are reported
//! with their line and the nearest known name; the other rows still load.
//!
//! Statements become thoughts in the third person ("Maria Lopez has a crush on Klaus
//! Mueller"), by a fixed rewrite rather than a model call, so the memory says what the file says.

use crate::sim::map::objects::edit_distance;

/// One row of a history file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryRow {
    /// 1-based line where the row starts.
    pub line: usize,
    /// The name as written (trimmed).
    pub name: String,
    /// The statements (trimmed, empty ones dropped).
    pub statements: Vec<String>,
}

/// A problem with one row; the others still load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryProblem {
    /// 1-based line of the row.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Splits CSV text into records of fields, each with the line it starts on. Fields are
/// trimmed; quotes are removed and doubled quotes unescaped.
pub fn parse_csv(text: &str) -> Result<Vec<(usize, Vec<String>)>, HistoryProblem> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut records = Vec::new();
    let mut fields: Vec<String> = Vec::new();
    let mut field = String::new();
    let mut quoted = false; // inside quotes
    let mut was_quoted = false;
    let mut line = 1usize;
    let mut start_line = 1usize;
    let mut chars = text.chars().peekable();
    let end_field = |field: &mut String, fields: &mut Vec<String>, was_quoted: &mut bool| {
        let f = std::mem::take(field);
        fields.push(if *was_quoted { f } else { f.trim().to_string() });
        *was_quoted = false;
    };
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                '\n' => {
                    line += 1;
                    field.push('\n');
                }
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' if field.trim().is_empty() => {
                field.clear();
                quoted = true;
                was_quoted = true;
            }
            ',' => end_field(&mut field, &mut fields, &mut was_quoted),
            '\r' => {}
            '\n' => {
                end_field(&mut field, &mut fields, &mut was_quoted);
                if fields.iter().any(|f| !f.trim().is_empty()) {
                    records.push((start_line, std::mem::take(&mut fields)));
                }
                fields.clear();
                line += 1;
                start_line = line;
            }
            // Text after a closing quote (`"a" b`) is kept: a hand-written file, not an error.
            _ => field.push(c),
        }
    }
    if quoted {
        return Err(HistoryProblem {
            line: start_line,
            message: "a quoted field is never closed (missing \")".into(),
        });
    }
    end_field(&mut field, &mut fields, &mut was_quoted);
    if fields.iter().any(|f| !f.trim().is_empty()) {
        records.push((start_line, fields));
    }
    Ok(records)
}

/// Parses a history file into rows (a header row `Name,…` is skipped). A row with more than two
/// columns came from a whisper with an unquoted comma: the columns after the name are joined.
pub fn parse_history(text: &str) -> Result<(Vec<HistoryRow>, Vec<HistoryProblem>), HistoryProblem> {
    let records = parse_csv(text)?;
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    for (i, (line, fields)) in records.into_iter().enumerate() {
        let name = fields
            .first()
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        if i == 0 && name.eq_ignore_ascii_case("name") {
            continue;
        }
        if name.is_empty() {
            problems.push(HistoryProblem {
                line,
                message: "the Name cell is empty".into(),
            });
            continue;
        }
        let whisper = fields[1..].join(", ");
        let statements: Vec<String> = whisper
            .split(';')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if statements.is_empty() {
            problems.push(HistoryProblem {
                line,
                message: format!("no statements for '{name}' (the Whisper cell is empty)"),
            });
            continue;
        }
        rows.push(HistoryRow {
            line,
            name,
            statements,
        });
    }
    Ok((rows, problems))
}

/// Matches a written name to a known one: exactly, else ignoring case and extra spaces.
pub fn match_name<'a>(written: &str, known: &'a [String]) -> Option<&'a String> {
    let norm = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    known.iter().find(|k| *k == written).or_else(|| {
        let w = norm(written);
        known.iter().find(|k| norm(k) == w)
    })
}

/// The known name closest to a written one (for "did you mean").
pub fn nearest_name<'a>(written: &str, known: &'a [String]) -> Option<&'a String> {
    known
        .iter()
        .min_by_key(|k| edit_distance(&k.to_lowercase(), &written.to_lowercase()))
}

/// Resolves rows against the scenario's names: (name, statements) for the known ones, and a
/// problem for each unknown one naming the nearest known name.
pub fn resolve(
    rows: Vec<HistoryRow>,
    known: &[String],
) -> (Vec<(String, Vec<String>)>, Vec<HistoryProblem>) {
    let mut ok = Vec::new();
    let mut problems = Vec::new();
    for r in rows {
        match match_name(&r.name, known) {
            Some(n) => ok.push((n.clone(), r.statements)),
            None => {
                let hint = nearest_name(&r.name, known)
                    .map(|n| format!(" (nearest: '{n}')"))
                    .unwrap_or_default();
                problems.push(HistoryProblem {
                    line: r.line,
                    message: format!(
                        "'{}' is not in the scenario{hint}",
                        crate::data::clean_text(&r.name)
                    ),
                });
            }
        }
    }
    (ok, problems)
}

/// Verbs after "you" that stay as they are (modals and past forms).
const KEEP: [&str; 14] = [
    "can", "could", "will", "would", "shall", "should", "may", "might", "must", "had", "did",
    "used", "ought", "need",
];
/// Words that may stand between "you" and its verb.
const ADVERBS: [&str; 14] = [
    "also",
    "often",
    "always",
    "never",
    "really",
    "usually",
    "still",
    "just",
    "sometimes",
    "frequently",
    "recently",
    "truly",
    "secretly",
    "both",
];

fn third_person(verb: &str) -> String {
    match verb {
        "are" => "is".into(),
        "were" => "was".into(),
        "have" => "has".into(),
        "do" => "does".into(),
        "go" => "goes".into(),
        "don't" => "doesn't".into(),
        "aren't" => "isn't".into(),
        "haven't" => "hasn't".into(),
        "weren't" => "wasn't".into(),
        v if KEEP.contains(&v)
            || v.ends_with("ed")
            || !v.chars().all(|c| c.is_ascii_alphabetic()) =>
        {
            v.into()
        }
        v if v.ends_with('s')
            || v.ends_with("sh")
            || v.ends_with("ch")
            || v.ends_with('x')
            || v.ends_with('z')
            || v.ends_with('o') =>
        {
            format!("{v}es")
        }
        v if v.ends_with('y')
            && v.len() > 1
            && !"aeiou".contains(v.chars().nth(v.len() - 2).unwrap_or('a')) =>
        {
            format!("{}ies", &v[..v.len() - 1])
        }
        v => format!("{v}s"),
    }
}

/// Rewrites a statement addressed to a person ("you", "your") into the third person about
/// them, with the verb agreeing ("you have" → "Maria Lopez has"; "You and Klaus have" keeps
/// "have").
pub fn to_third_person(statement: &str, name: &str) -> String {
    let words: Vec<&str> = statement.split(' ').collect();
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        let core = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'');
        let lead = &w[..w.find(core).unwrap_or(0)];
        let trail = &w[w.find(core).unwrap_or(0) + core.len()..];
        let lower = core.to_lowercase();
        match lower.as_str() {
            "you're" | "you've" | "you'll" | "you'd" => {
                let verb = match lower.as_str() {
                    "you're" => "is",
                    "you've" => "has",
                    "you'll" => "will",
                    _ => "would",
                };
                out.push(format!("{lead}{name} {verb}{trail}"));
            }
            "your" | "yours" => out.push(format!("{lead}{name}'s{trail}")),
            "yourself" => out.push(format!("{lead}{name}{trail}")),
            "you" => {
                out.push(format!("{lead}{name}{trail}"));
                // A subject "you" (no punctuation after it, not "you and …") makes the verb agree.
                if trail.is_empty() {
                    let mut j = i + 1;
                    while j < words.len() && ADVERBS.contains(&words[j].to_lowercase().as_str()) {
                        out.push(words[j].to_string());
                        j += 1;
                    }
                    if let Some(next) = words.get(j) {
                        let n = next.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '\'');
                        let ntrail = &next[n.len()..];
                        let nl = n.to_lowercase();
                        let is_verb = !matches!(
                            nl.as_str(),
                            "and"
                                | "or"
                                | "to"
                                | "in"
                                | "at"
                                | "for"
                                | "with"
                                | "who"
                                | "that"
                                | "both"
                                | "all"
                        ) && !n.is_empty()
                            && n.chars().next().is_some_and(|c| c.is_lowercase());
                        // Only when "you" began a clause (not an object such as "tell you …").
                        let subject = i == 0
                            || words[i - 1].ends_with([';', ',', '.', ':', '-', '!', '?'])
                            || matches!(
                                words[i - 1].to_lowercase().as_str(),
                                "--" | "and"
                                    | "but"
                                    | "that"
                                    | "because"
                                    | "since"
                                    | "when"
                                    | "so"
                                    | "if"
                                    | "while"
                            );
                        if is_verb && subject {
                            out.push(format!("{}{ntrail}", third_person(&nl)));
                            i = j + 1;
                            continue;
                        }
                    }
                    i = j;
                    continue;
                }
            }
            _ => out.push(w.to_string()),
        }
        i += 1;
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec![
            "Isabella Rodriguez".into(),
            "Maria Lopez".into(),
            "Klaus Mueller".into(),
        ]
    }

    #[test]
    fn csv_quoting_spaces_and_empty_cells() {
        let text = "Name,Whisper\n\"Maria Lopez\",\"you like tea, and coffee; you study physics;\"\n  Klaus Mueller ,  you read a lot ;  ; \nIsabella Rodriguez,\n\n\"Isabella Rodriguez\",\"she said \"\"hi\"\"; line\ntwo\"\n";
        let (rows, problems) = parse_history(text).unwrap();
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert_eq!(
            rows[0],
            HistoryRow {
                line: 2,
                name: "Maria Lopez".into(),
                statements: vec![
                    "you like tea, and coffee".into(),
                    "you study physics".into()
                ]
            }
        );
        assert_eq!(
            rows[1].name, "Klaus Mueller",
            "stray spaces around the name"
        );
        assert_eq!(
            rows[1].statements,
            vec!["you read a lot"],
            "empty statements and the trailing semicolon are dropped"
        );
        assert_eq!(rows[2].line, 6);
        assert_eq!(rows[2].statements, vec!["she said \"hi\"", "line\ntwo"]);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].line, 4);
        assert!(problems[0].message.contains("empty"), "{:?}", problems[0]);
    }

    #[test]
    fn unquoted_commas_and_crlf() {
        let (rows, _) =
            parse_history("Name,Whisper\r\nMaria Lopez,you rise early, then you run\r\n").unwrap();
        assert_eq!(rows[0].statements, vec!["you rise early, then you run"]);
        assert!(parse_history("Name,Whisper\nMaria Lopez,\"never closed\n").is_err());
        let (rows, _) = parse_history("Maria Lopez,no header here").unwrap();
        assert_eq!(rows.len(), 1, "a file without a header still loads");
    }

    #[test]
    fn unknown_names_are_reported_with_the_nearest() {
        let (rows, _) = parse_history(
            "Name,Whisper\nIsabela Rodrigez,you bake\nmaria  lopez,you stream\nNobody Here,x\n",
        )
        .unwrap();
        let (ok, problems) = resolve(rows, &names());
        assert_eq!(
            ok,
            vec![("Maria Lopez".to_string(), vec!["you stream".to_string()])]
        );
        assert_eq!(problems.len(), 2);
        assert_eq!(problems[0].line, 2);
        assert!(
            problems[0]
                .message
                .contains("nearest: 'Isabella Rodriguez'"),
            "{}",
            problems[0].message
        );
        assert_eq!(problems[1].line, 4);
    }

    #[test]
    fn statements_in_the_third_person() {
        let n = "Maria Lopez";
        let cases = [
            (
                "This is very important -- you have a secret crush on Klaus Mueller",
                "This is very important -- Maria Lopez has a secret crush on Klaus Mueller",
            ),
            (
                "You and Klaus Mueller have known each other for over 2 years now",
                "Maria Lopez and Klaus Mueller have known each other for over 2 years now",
            ),
            (
                "For planning, you frequent Hobbs Cafe for studying",
                "For planning, Maria Lopez frequents Hobbs Cafe for studying",
            ),
            (
                "you love your work at Hobbs Cafe.",
                "Maria Lopez loves Maria Lopez's work at Hobbs Cafe.",
            ),
            (
                "You are excited to be planning a party",
                "Maria Lopez is excited to be planning a party",
            ),
            (
                "you also study with Klaus",
                "Maria Lopez also studies with Klaus",
            ),
            (
                "Klaus wants to tell you a secret",
                "Klaus wants to tell Maria Lopez a secret",
            ),
            ("you're a student", "Maria Lopez is a student"),
            ("Maria Lopez is a student", "Maria Lopez is a student"),
            ("you can sing", "Maria Lopez can sing"),
        ];
        for (from, want) in cases {
            assert_eq!(to_third_person(from, n), want, "{from}");
        }
    }
}
