//! Errors for bad input files (maps, scenarios, configs, saves): every one names the file, the
//! line and the field, so a user editing a file by hand can find the mistake at once.

use std::fmt;
use std::path::{Path, PathBuf};

/// A problem in a data file the user can edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataError {
    /// The file that holds the problem.
    pub file: PathBuf,
    /// 1-based line of the problem (0 when the whole file is at fault, e.g. unreadable).
    pub line: usize,
    /// The field (a path such as `sectors[3].arenas[0].rect`) or a short label.
    pub field: String,
    /// What is wrong, in words.
    pub message: String,
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: ", self.file.display(), self.line)?;
        } else {
            write!(f, "{}: ", self.file.display())?;
        }
        if !self.field.is_empty() {
            write!(f, "field `{}`: ", self.field)?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for DataError {}

impl DataError {
    /// A new error.
    pub fn new(
        file: &Path,
        line: usize,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            file: file.to_path_buf(),
            line,
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Finds line numbers of things in the source text of a data file, so that errors found after
/// parsing (semantic checks) still point at a line.
pub struct SourceLines<'a> {
    src: &'a str,
}

impl<'a> SourceLines<'a> {
    /// Wraps the source text.
    pub fn new(src: &'a str) -> Self {
        Self { src }
    }

    /// 1-based line of a byte offset.
    pub fn line_of_offset(&self, offset: usize) -> usize {
        self.src[..offset.min(self.src.len())]
            .bytes()
            .filter(|b| *b == b'\n')
            .count()
            + 1
    }

    /// Line of the `nth` (0-based) occurrence of `needle`, searching from byte `from`.
    pub fn find_from(&self, needle: &str, from: usize) -> Option<(usize, usize)> {
        let at = self.src.get(from..)?.find(needle)? + from;
        Some((self.line_of_offset(at), at))
    }

    /// Line of the first occurrence of `needle` at or after `from`, or of `from` itself.
    pub fn line_near(&self, needle: &str, from: usize) -> usize {
        self.find_from(needle, from)
            .map(|(l, _)| l)
            .unwrap_or_else(|| self.line_of_offset(from))
    }

    /// Line of a quoted string value such as `"Hobbs Cafe"`, at or after `from`.
    pub fn line_of_quoted(&self, value: &str, from: usize) -> usize {
        self.line_near(&format!("\"{value}\""), from)
    }

    /// Byte offset of a quoted string value at or after `from` (or `from`).
    pub fn offset_of_quoted(&self, value: &str, from: usize) -> usize {
        self.find_from(&format!("\"{value}\""), from)
            .map(|(_, o)| o)
            .unwrap_or(from)
    }
}

/// A value as the text of a data file of ours: `comment` as `//` lines, then pretty RON
/// nested up to `depth` levels on lines of their own. Apostrophes are left unescaped (RON writes
/// `\'`), so names read as written and error messages can find them.
pub fn ron_text<T: serde::Serialize>(value: &T, depth: usize, comment: &str) -> String {
    let pretty = ron::ser::PrettyConfig::new()
        .depth_limit(depth)
        .separate_tuple_members(false);
    let body = ron::ser::to_string_pretty(value, pretty)
        .unwrap_or_default()
        .replace("\\'", "'");
    let mut out = String::new();
    for line in comment.lines() {
        out.push_str("// ");
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&body);
    out.push('\n');
    out
}

/// Reads a file and parses it as RON, turning both failures into a [`DataError`] with the line.
pub fn read_ron<T: serde::de::DeserializeOwned>(path: &Path) -> Result<(T, String), DataError> {
    let src = crate::data::read_bounded(path, crate::data::MAX_TEXT_BYTES)
        .map_err(|e| DataError::new(path, 0, "", format!("cannot read the file: {e}")))?;
    let value = parse_ron(path, &src)?;
    Ok((value, src))
}

/// Parses RON text, turning a syntax or shape error into a [`DataError`] with the line.
pub fn parse_ron<T: serde::de::DeserializeOwned>(path: &Path, src: &str) -> Result<T, DataError> {
    let options =
        ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME);
    // "outer.field", or the field alone at the top.
    let dotted = |outer: &Option<String>, field: &str| match outer {
        Some(o) => format!("{o}.{field}"),
        None => field.to_string(),
    };
    options.from_str::<T>(src).map_err(|e| {
        let field = match &e.code {
            ron::Error::MissingStructField { field, outer } => dotted(outer, field),
            ron::Error::NoSuchStructField { found, outer, .. } => dotted(outer, found),
            ron::Error::NoSuchEnumVariant { found, .. } => found.clone(),
            _ => String::new(),
        };
        DataError::new(path, e.span.start.line, field, e.code.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_lines() {
        let src = "a\nb \"x\"\nc \"x\"\n";
        let s = SourceLines::new(src);
        assert_eq!(s.line_of_quoted("x", 0), 2);
        let off = s.offset_of_quoted("x", 0);
        assert_eq!(s.line_of_quoted("x", off + 1), 3);
        assert_eq!(s.line_of_offset(0), 1);
    }

    #[test]
    fn ron_errors_name_the_line() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct T {
            a: u32,
            b: String,
        }
        let err = parse_ron::<T>(Path::new("x.ron"), "(\n a: 1,\n b: 2,\n)").unwrap_err();
        assert_eq!(err.line, 3, "{err}");
        assert!(err.to_string().starts_with("x.ron:3:"), "{err}");
        let err = parse_ron::<T>(Path::new("x.ron"), "(\n a: 1,\n c: \"\",\n)").unwrap_err();
        assert!(err.to_string().contains("c"), "{err}");
    }
}
