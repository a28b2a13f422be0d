//! What an import of people found that it could not use as it was: names, places and memories
//! left out or changed, each with where it was read ([`PeopleReport`]).

/// What a scenario import read, and what it derived, defaulted or left out.
#[derive(Debug, Clone, Default)]
pub struct PeopleReport {
    /// One line per thing read.
    pub read: Vec<String>,
    /// One line per default, derivation or omission.
    pub notes: Vec<String>,
}

impl std::fmt::Display for PeopleReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for l in &self.read {
            writeln!(f, "  {l}")?;
        }
        if self.notes.is_empty() {
            writeln!(f, "  nothing defaulted or skipped")?;
        } else {
            writeln!(f, "  derived, defaulted or skipped:")?;
            for l in &self.notes {
                writeln!(f, "    - {l}")?;
            }
        }
        Ok(())
    }
}
