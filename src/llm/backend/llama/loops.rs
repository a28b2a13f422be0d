//! Answers that went round in a loop. A small model sometimes falls into counting ("1, 2, 3, 4,
//! 5, …" where a line of conversation or an insight should be) and goes on until the token
//! budget is spent; the answer is then cut off, fails its shape, and the retry, with twice the
//! room, often counts again. Noticed while it happens, the request is ended at once and
//! retried.
//!
//! Only what no answer needs is caught: inside a string (a JSON string, or a plain-text answer's
//! current line) eight or more integers counting up by one, or 24 bytes in a row with no letter
//! and no space ("1.1.1.1.1.1.1.1.1.1.1.1", seen in insights, one of which ran on to its token
//! budget). Repetition of words is not caught: answers
//! that repeat a piece ("2023, 2023, …", the same step three times) mostly close by themselves
//! or at their grammar's bounds and are then read (measured on the 25-resident morning, stopping
//! them turned valid plans into retries), and numbers outside strings (a list of minutes, the
//! statements an insight rests on, a list of scores) are the shape's business, not this check's.
//! Answers with no text in them (a number, a choice, a list of numbers) are bounded by their
//! grammar and not watched.

use crate::llm::types::OutputShape;

/// What of an answer is watched for loops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watch {
    /// Nothing (a number, a choice, yes/no, a list of numbers: the grammar bounds them).
    Nothing,
    /// A JSON object: its strings.
    Json,
    /// Free text or lines: the current line.
    Text,
}

impl Watch {
    /// What to watch in an answer of this shape.
    pub fn for_shape(shape: &OutputShape) -> Self {
        match shape {
            OutputShape::Json(_) => Watch::Json,
            OutputShape::Text | OutputShape::Lines(_) => Watch::Text,
            _ => Watch::Nothing,
        }
    }
}

/// Where an answer (the bytes generated so far) went round in a loop: a short description of
/// the loop, or None.
pub fn looping(out: &[u8], watch: Watch) -> Option<String> {
    if out.len() < 16 || watch == Watch::Nothing {
        return None;
    }
    let s = match watch {
        Watch::Json => open_string(out),
        _ => current_line(out),
    };
    counting_tail(s)
        .map(|n| format!("counting ({n} numbers in a row)"))
        .or_else(|| {
            let n = wordless_tail(s);
            (n >= WORDLESS_RUN).then(|| format!("no words ({n} bytes without a letter or a space)"))
        })
}

/// Bytes in a row at the end of a string that no text holds: no letter, no space.
const WORDLESS_RUN: usize = 24;

/// How many bytes at the end of `s` are neither a letter nor white space ("1.1.1.1.1.1…",
/// "}}}}…"); a byte of a character outside ASCII counts as a letter (names, emoji).
fn wordless_tail(s: &[u8]) -> usize {
    s.iter()
        .rev()
        .take_while(|&&b| b.is_ascii() && !b.is_ascii_alphabetic() && !b.is_ascii_whitespace())
        .count()
}

/// The line being written.
fn current_line(out: &[u8]) -> &[u8] {
    let start = out.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    &out[start..]
}

/// The text of the JSON string being written (after the last unescaped quote), or nothing when
/// outside strings.
fn open_string(out: &[u8]) -> &[u8] {
    let mut last_quote = None;
    let mut quotes = 0usize;
    let mut escaped = false;
    for (i, &b) in out.iter().enumerate() {
        if escaped {
            escaped = false;
        } else if b == b'\\' {
            escaped = true;
        } else if b == b'"' {
            quotes += 1;
            last_quote = Some(i);
        }
    }
    match last_quote {
        Some(i) if quotes % 2 == 1 => &out[i + 1..],
        _ => &[],
    }
}

/// How many integers count up by one at the end of `s` (each separated from the next by one to
/// three bytes that are neither digits nor letters), or every other number does, when eight
/// or more, or four or more that are all the text holds.
fn counting_tail(s: &[u8]) -> Option<usize> {
    let mut nums: Vec<(u64, usize, usize)> = Vec::new(); // (value, start, end)
    let mut i = 0;
    while i < s.len() {
        if s[i].is_ascii_digit() {
            let start = i;
            let mut v: u64 = 0;
            while i < s.len() && s[i].is_ascii_digit() {
                v = v.saturating_mul(10).saturating_add((s[i] - b'0') as u64);
                i += 1;
            }
            nums.push((v, start, i));
        } else {
            i += 1;
        }
    }
    if nums.is_empty() {
        return None;
    }
    // Whether each number follows the one before it after one to three separator bytes.
    let joined: Vec<bool> = (0..nums.len())
        .map(|i| {
            i > 0 && {
                let sep = &s[nums[i - 1].2..nums[i].1];
                (1..=3).contains(&sep.len()) && sep.iter().all(|c| !c.is_ascii_alphanumeric())
            }
        })
        .collect();
    // Only a run that reaches the end of the text (nothing but separators after it) counts.
    let last = nums.len() - 1;
    let e = nums[last].2;
    if !(s[e..].len() <= 3 && s[e..].iter().all(|c| !c.is_ascii_alphanumeric())) {
        return None;
    }
    // Counting by one, or every other number counting by one with another between them
    // ("(2) 10 (3) 10 (4)"): for each number, how many count up to it, and where that starts.
    let mut best = 0;
    for stride in [1usize, 2] {
        let mut run = vec![(1usize, 0usize); nums.len()];
        for i in 0..nums.len() {
            run[i] = (1, i);
            if i >= stride
                && (i + 1 - stride..=i).all(|k| joined[k])
                && nums[i].0 == nums[i - stride].0.saturating_add(1)
            {
                let (n, from) = run[i - stride];
                run[i] = (n + 1, from);
            }
        }
        // The run ends at the last number, or (every other number) at the one before it.
        let ends: &[usize] = if stride == 2 && joined[last] && last > 0 {
            &[last, last - 1]
        } else {
            &[last]
        };
        for &i in ends {
            let (n, from) = run[i];
            // A text that is nothing but counting from its start ("1, 2, 3, 4") says nothing
            // already at four numbers; inside words it takes eight.
            let from_start =
                stride == 1 && s[..nums[from].1].iter().all(|c| !c.is_ascii_alphanumeric());
            let least = if from_start { COUNTING_FROM_START } else { 8 };
            if n >= least {
                best = best.max(n);
            }
        }
    }
    (best > 0).then_some(best)
}

/// Numbers counting up from the start of a text that make it a loop.
const COUNTING_FROM_START: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    fn looping(out: &[u8]) -> Option<String> {
        super::looping(out, Watch::Json)
    }

    #[test]
    fn counting_inside_a_string_is_a_loop() {
        let a =
            br#"{"end_conversation" : false, "topic" : 1, "utterance" : "1, 2, 3, 4, 5, 6, 7, 8, "#;
        assert!(looping(a).unwrap().contains("counting"));
        let b = br#"{"insight" : "Floors 1, 2, 3, 4, 5, 6, 7"#;
        assert!(
            looping(b).is_none(),
            "seven numbers after words are not yet a loop"
        );
        // A string that is nothing but counting is one at four numbers, not at three.
        let c = br#"{"end_conversation" : false, "topic" : 1, "utterance" : "1, 2, 3, 4"#;
        assert!(looping(c).unwrap().contains("4 numbers"));
        let d = br#"{"end_conversation" : false, "topic" : 1, "utterance" : "1, 2, 3"#;
        assert!(looping(d).is_none());
        let e = br#"{"end_conversation" : false, "topic" : 1, "utterance" : "At 9, 10, 11, 12"#;
        assert!(looping(e).is_none(), "words before the numbers");
        // Counting with another number between (seen in an insight: 495 tokens before).
        let f = br#"{"insights": [{"because": [1], "insight": "} 5 (1) 10 (2) 10 (3) 10 (4) 10 (5) 10 (6) 10 (7) 10 (8"#;
        assert!(looping(f).unwrap().contains("8 numbers"));
        let g = br#"{"insight": "} 5 (1) 10 (2) 10 (3) 10 (4) 10 (5) 10 (6) 10 (7) 10"#;
        assert!(looping(g).is_none(), "seven counted");
        let h = br#"{"insight": "} 5 (1) 10 (2) 10 (3) 10 (4) 10 (5) 10 (6) 10 (7) 10 (8) 10"#;
        assert!(looping(h).is_some(), "ending at the number between");
        // A plain-text answer's line.
        let text = b"1. Why?\n2. The first 1 2 3 4 5 6 7 8 9";
        assert!(super::looping(text, Watch::Text).is_some());
        assert!(super::looping(b"1. Why?\n2. How?\n3. When?\n4. Who?", Watch::Text).is_none());
        // Numbers that do not count up, or words between them, are not.
        assert!(looping(br#"{"u": "at 7, 8 or 9 on Monday, 10 11 12 13 14"#).is_none());
        assert!(looping(br#"{"u": "rooms 1, 3, 5, 7, 9, 11, 13, 15, 17, 19"#).is_none());
    }

    #[test]
    fn numbers_outside_strings_are_the_shapes_business() {
        let a = br#"{"subtasks": ["wake up"], "subtasks_minutes": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10"#;
        assert!(looping(a).is_none());
        let b = br#"{"subtasks_minutes": [15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15"#;
        assert!(looping(b).is_none());
        let c = br#"{"because": [1, 2, 3, 4, 5, 6, 7, 8, 9], "insight": "he likes art"#;
        assert!(looping(c).is_none());
        // A list of scores is not watched at all: its grammar bounds it.
        let shape = OutputShape::Integers {
            count: 9,
            min: 1,
            max: 10,
        };
        assert_eq!(Watch::for_shape(&shape), Watch::Nothing);
        assert!(super::looping(b"[1, 2, 3, 4, 5, 6, 7, 8, 9", Watch::Nothing).is_none());
        assert_eq!(Watch::for_shape(&OutputShape::Lines(3)), Watch::Text);
        assert_eq!(
            Watch::for_shape(&OutputShape::Json(serde_json::json!({}))),
            Watch::Json
        );
    }

    #[test]
    fn repeating_is_left_to_the_shape() {
        let a = br#"{"plan": ["Work: 12:30, Meal: 19:00, 2023, 2023, 2023, 2023, 2023"#;
        assert!(looping(a).is_none());
        let obj = r#"{"emoji": "🌟", "object": "cafe customer seating", "object_state": "idle"}, "#;
        let b = format!(r#"{{"steps": [{obj}{obj}{obj}"#);
        assert!(looping(b.as_bytes()).is_none());
        assert!(
            looping(br#"{"u": "\"quoted\" 1, 2, 3, 4, 5, 6, 7, 8, 9"#).is_some(),
            "escaped quotes stay inside"
        );
    }

    #[test]
    fn a_string_without_letters_or_spaces_is_a_loop() {
        let a = br#"{"insights": [{"insight": "1.1.1.1.1.1.1.1.1.1.1.1.1"#;
        assert!(looping(a).unwrap().contains("no words (25 bytes"));
        let b = br#"{"insights": [{"insight": "1.1.1.1.1.1.1.1.1.1.1"#;
        assert!(looping(b).is_none(), "21 bytes are not yet one");
        // Words, spaces or characters outside ASCII break the run; outside strings nothing counts.
        assert!(looping(br#"{"u": "at 10:00-11:00, 11:00-12:00, 12:00-13:00, 13:00"#).is_none());
        assert!(looping("{\"e\": \"🌟🌟🌟🌟🌟🌟🌟🌟".as_bytes()).is_none());
        assert!(looping(br#"{"u": "ok", "n": [1111111111111111111111111111"#).is_none());
        assert!(super::looping(b"1. Why?\n2. ..........................", Watch::Text).is_some());
    }

    #[test]
    fn short_or_finished_answers_are_not_loops() {
        assert!(looping(b"").is_none());
        assert!(looping(b"yes").is_none());
        assert!(looping(br#"{"utterance": "1, 2, 3, 4, 5, 6, 7, 8, 9", "end": true}"#).is_none());
    }
}
