//! Importance by likeness: a memory's importance read from its embedding, without asking the
//! chat model. The scale is the importance prompt's own, given by examples (a level from 1 to 10
//! and a short text each: "1: brushing teeth", "10: a break up"); a memory takes the levels of
//! the examples it is most like, weighted by how much more like them it is than the others
//! (a softmax of the cosines at [`LIKENESS_TEMPERATURE`]).
//!
//! Why: the small model the game ships with answers the importance prompt by counting (a batch
//! of five memories is scored "[1, 2, 3, 4, 5]", one memory "[1]"), so its scores are the
//! memories' places in the list. The embedder already reads every memory; its likeness to the
//! scale's examples is a meaning the small model cannot give, at no request's cost. With a big
//! model, `cognition.importance_by: Model` asks it as the original did.

use crate::data_error::DataError;
use std::path::Path;

/// How sharply a memory takes the level of the examples it is most like: the softmax
/// temperature of the cosines (all-MiniLM-L6-v2's cosines between unrelated short sentences lie
/// within about 0.1 of each other, so 0.05 weighs the nearest few examples).
pub const LIKENESS_TEMPERATURE: f32 = 0.05;

/// The importance scale by example (the file `importance_scale.txt` beside the prompts).
#[derive(Debug, Clone, PartialEq)]
pub struct ImportanceScale {
    /// (level 1..=10, example text), in the file's order.
    pub examples: Vec<(u8, String)>,
}

impl ImportanceScale {
    /// Reads the scale: `#` comment lines and blank lines, then one example a line, `level:
    /// text`, with at least two different levels.
    pub fn parse(file: &Path, text: &str) -> Result<Self, DataError> {
        let mut examples = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |field: &str, msg: String| DataError::new(file, i + 1, field, msg);
            let Some((level, example)) = line.split_once(':') else {
                return Err(bad(
                    "example",
                    format!("'{line}' is not 'level: example' (e.g. '1: brushing teeth')"),
                ));
            };
            let level: u8 = level
                .trim()
                .parse()
                .ok()
                .filter(|l| (1..=10).contains(l))
                .ok_or_else(|| {
                    bad(
                        "level",
                        format!("'{}' is not a level from 1 to 10", level.trim()),
                    )
                })?;
            let example = example.trim();
            if example.is_empty() {
                return Err(bad("example", format!("level {level} has no example text")));
            }
            examples.push((level, example.to_string()));
        }
        let first = examples.first().map(|e| e.0);
        if examples.iter().all(|e| Some(e.0) == first) {
            return Err(DataError::new(
                file,
                0,
                "examples",
                "the scale needs examples of at least two different levels (e.g. '1: brushing teeth' and '10: a break up')",
            ));
        }
        Ok(Self { examples })
    }

    /// The importance of a memory whose unit vector is `v`, given the examples' unit vectors in
    /// the scale's order: the levels weighted by the softmax of the cosines, rounded, 1..=10.
    /// Vectors of other lengths than `v` are left out; none left gives `None`.
    pub fn score(&self, examples: &[&[f32]], v: &[f32]) -> Option<u8> {
        let cos: Vec<(f32, f32)> = self
            .examples
            .iter()
            .zip(examples)
            .filter(|(_, e)| e.len() == v.len() && !v.is_empty())
            .map(|((level, _), e)| {
                let c: f32 = e.iter().zip(v).map(|(a, b)| a * b).sum();
                (*level as f32, c)
            })
            .filter(|(_, c)| c.is_finite())
            .collect();
        let top = cos
            .iter()
            .map(|(_, c)| *c)
            .fold(f32::NEG_INFINITY, f32::max);
        if cos.is_empty() {
            return None;
        }
        let (mut sum, mut weight) = (0.0f32, 0.0f32);
        for (level, c) in cos {
            let w = ((c - top) / LIKENESS_TEMPERATURE).exp();
            sum += w * level;
            weight += w;
        }
        Some((sum / weight).round().clamp(1.0, 10.0) as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCALE: &str = "# a comment\n1: brushing teeth\n\n5: planning a project\n10: a break up\n";

    #[test]
    fn reads_levels_and_examples_and_names_the_line_of_a_bad_one() {
        let s = ImportanceScale::parse(Path::new("s.txt"), SCALE).unwrap();
        assert_eq!(
            s.examples,
            vec![
                (1, "brushing teeth".to_string()),
                (5, "planning a project".to_string()),
                (10, "a break up".to_string())
            ]
        );
        let e = ImportanceScale::parse(Path::new("s.txt"), "1: a\n11: b\n").unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (2, "level"), "{e}");
        let e = ImportanceScale::parse(Path::new("s.txt"), "1: a\n\nno colon\n").unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (3, "example"), "{e}");
        let e = ImportanceScale::parse(Path::new("s.txt"), "3: a\n3: b\n").unwrap_err();
        assert!(e.message.contains("two different levels"), "{e}");
    }

    #[test]
    fn a_memory_takes_the_level_of_the_examples_it_is_most_like() {
        let s = ImportanceScale::parse(Path::new("s.txt"), SCALE).unwrap();
        let (low, mid, high) = ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]);
        let ex: Vec<&[f32]> = vec![&low, &mid, &high];
        assert_eq!(s.score(&ex, &[0.9, 0.1, 0.0]), Some(1));
        assert_eq!(s.score(&ex, &[0.0, 0.1, 0.9]), Some(10));
        assert_eq!(s.score(&ex, &[0.1, 0.9, 0.0]), Some(5));
        // Equally like the lowest and the highest: halfway.
        let h = std::f32::consts::FRAC_1_SQRT_2;
        assert_eq!(s.score(&ex, &[h, 0.0, h]), Some(6));
        // Vectors of another embedder (another length) are not compared.
        assert_eq!(s.score(&ex, &[1.0, 0.0]), None);
        assert_eq!(s.score(&ex[..1], &[0.0, 0.0, 1.0]), Some(1));
    }
}
