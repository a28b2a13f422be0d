//! Interview questions (`category: question` per line) and human-written answers
//! (`resident | question | answer` per line) for `lab interviews`, read with errors that name the
//! file and line.

use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// A question of a category. `{name}` is the interviewee's name, `{someone}` another resident
/// the interviewee's first memories name (or the next resident in the list), `{fact1}`,
/// `{fact2}`, … the question of the town's first, second, … followed fact (its scenario's
/// `facts`; [`NO_FACT`] where it has fewer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// Category.
    pub category: String,
    /// The question.
    pub text: String,
}

/// The question asked for a `{factN}` the town does not follow.
pub const NO_FACT: &str = "What news have you heard lately?";

/// The paper's categories with questions after its appendix (the memory questions name other
/// residents through `{someone}` and ask of the town's own news through `{fact1}`, `{fact2}`:
/// in Smallville, Sam's candidacy and Isabella's party).
pub const DEFAULT_QUESTIONS: &str = "\
# category: question   ({name} = the interviewee, {someone} = a resident they know,
#                       {fact1}, {fact2} = the questions of the town's followed facts)
self-knowledge: Give an introduction of yourself.
self-knowledge: How would you describe your typical weekday schedule in broad strokes?
self-knowledge: What is your job?
self-knowledge: What do you care about most?
self-knowledge: Who do you live with?
memory: Who is {someone}?
memory: {fact1}
memory: {fact2}
memory: What did you do yesterday?
memory: Who did you talk to most recently, and what about?
plans: What will you be doing at 10 am tomorrow?
plans: What will you be doing at 6 pm today?
plans: What will you be doing at 1 pm today?
plans: What will you do this weekend?
plans: What is the next thing you plan to do?
reactions: Your breakfast is burning! What would you do?
reactions: The bathroom is occupied. What would you do?
reactions: You need to cook dinner but your refrigerator is empty. What would you do?
reactions: You see your friend walking by the street. What would you do or say to your friend?
reactions: You see a fire on the street. What would you do?
reflections: If you were to spend time with one person you met recently, who would it be and why?
reflections: What is something you learned recently about someone in town?
reflections: What matters most to you this week, and why?
reflections: Who in town do you admire, and why?
reflections: What would you change about your life if you could?
";

/// Reads questions (`category: question` per line; `#` comments and blank lines skipped).
pub fn parse_questions(text: &str, file: &str) -> Result<Vec<Question>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let (cat, q) = t.split_once(':').ok_or_else(|| {
            format!(
                "{file}:{}: expected `category: question`, found {t:?}",
                i + 1
            )
        })?;
        let (cat, q) = (cat.trim(), q.trim());
        if cat.is_empty() || q.is_empty() {
            return Err(format!(
                "{file}:{}: the category and the question must both be given",
                i + 1
            ));
        }
        for (at, _) in q.match_indices('{') {
            let rest = &q[at..];
            let fact = rest
                .strip_prefix("{fact")
                .and_then(|r| r.split_once('}'))
                .is_some_and(|(n, _)| n.parse::<usize>().is_ok_and(|n| n >= 1));
            if !(rest.starts_with("{name}") || rest.starts_with("{someone}") || fact) {
                return Err(format!(
                    "{file}:{}: unknown placeholder in {q:?} (known: {{name}}, {{someone}}, {{fact1}}, {{fact2}}, …)",
                    i + 1
                ));
            }
        }
        out.push(Question {
            category: cat.into(),
            text: q.into(),
        });
    }
    if out.is_empty() {
        return Err(format!("{file}:1: no questions in the file"));
    }
    Ok(out)
}

/// Reads a questions file.
pub fn read_questions(path: &Path) -> Result<Vec<Question>, String> {
    let text = crate::data::read_text(path)?;
    parse_questions(&text, &path.display().to_string())
}

/// Human answers: `resident | question | answer` per line (the question as asked, placeholders
/// filled in).
pub fn read_human(path: &Path) -> Result<BTreeMap<(String, String), String>, String> {
    let text = crate::data::read_text(path)?;
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let parts: Vec<&str> = t.splitn(3, '|').map(str::trim).collect();
        if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) {
            return Err(format!(
                "{}:{}: expected `resident | question | answer`",
                path.display(),
                i + 1
            ));
        }
        out.insert(
            (parts[0].to_string(), parts[1].to_string()),
            parts[2].to_string(),
        );
    }
    Ok(out)
}

/// Refuses human answers for someone who is not a resident (naming the file and line).
pub fn check_human(
    human: &BTreeMap<(String, String), String>,
    residents: &[(String, Entity)],
    path: &Path,
) -> Result<(), String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    for (resident, _) in human.keys() {
        if !residents.iter().any(|(n, _)| n == resident) {
            let line = text
                .lines()
                .position(|l| l.trim_start().starts_with(resident.as_str()))
                .map(|i| i + 1)
                .unwrap_or(1);
            return Err(format!(
                "{}:{line}: {resident:?} is not a resident of this town",
                path.display()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_questions_are_five_categories_of_five() {
        let q = parse_questions(DEFAULT_QUESTIONS, "default").unwrap();
        assert_eq!(q.len(), 25);
        let cats: std::collections::BTreeSet<&str> =
            q.iter().map(|x| x.category.as_str()).collect();
        assert_eq!(cats.len(), 5);
    }

    #[test]
    fn a_bad_questions_line_is_named() {
        let e = parse_questions("# c\nplans: ok?\nno colon here\n", "q.txt").unwrap_err();
        assert!(
            e.starts_with("q.txt:3: expected `category: question`"),
            "{e}"
        );
        let e = parse_questions("memory: Who is {friend}?\n", "q.txt").unwrap_err();
        assert!(e.starts_with("q.txt:1: unknown placeholder"), "{e}");
        let e = parse_questions("memory: {fact0}\n", "q.txt").unwrap_err();
        assert!(e.starts_with("q.txt:1: unknown placeholder"), "{e}");
        assert!(parse_questions("memory: {fact3}\n", "q.txt").is_ok());
        assert!(
            parse_questions("# nothing\n", "q.txt")
                .unwrap_err()
                .contains("no questions")
        );
    }
}
