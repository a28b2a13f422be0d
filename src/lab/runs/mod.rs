//! A lab run's folder over its sittings: one process works in it at a time and a resume goes on
//! only with the inputs and the build the run began with ([`guard`]); where the unfinished runs of
//! a folder stand, read while they work ([`status`]).

pub mod folder;
pub mod guard;
pub mod inputs;
pub mod status;

use std::path::{Path, PathBuf};

/// The stem of an unfinished run's folder `.<name>-<date>.partial` (`society-20261129`), or
/// `None` for any other path.
pub fn stem(work: &Path) -> Option<&str> {
    work.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix('.'))
        .and_then(|n| n.strip_suffix(".partial"))
}

/// Whether a run's folder stem (`society-20261129`, `society-20261129-2`) is of `name` (and not
/// of a longer name that begins with it, such as `society-relationships` or `society-2`).
pub fn named(stem: &str, name: &str) -> bool {
    let (of, date, _) = order(stem);
    date > 0 && of == name
}

/// The unfinished runs in `out` (those named `name`, when given), in their folders' order.
pub fn unfinished(out: &Path, name: Option<&str>) -> Result<Vec<PathBuf>, String> {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(out)
        .map_err(|e| format!("{}: {e}", out.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| stem(p).is_some_and(|s| name.is_none_or(|w| named(s, w))))
        .collect();
    runs.sort_by_cached_key(|p| order(stem(p).unwrap_or_default()));
    Ok(runs)
}

/// A run's place among the runs of its name: its name, then the day it began, then its number
/// that day (`society-20261129` before `society-20261129-2` before `society-20261129-10`).
fn order(stem: &str) -> (String, u32, u32) {
    if let Some((name, date)) = dated(stem) {
        return (name.to_string(), date, 1);
    }
    stem.rsplit_once('-')
        .filter(|(_, n)| all_digits(n))
        .and_then(|(rest, n)| Some((dated(rest)?, n.parse().ok()?)))
        .map_or((stem.to_string(), 0, 0), |((name, date), n)| {
            (name.to_string(), date, n)
        })
}

/// A stem's name and the date it ends with (`society-20261129`: "society", 20261129).
fn dated(stem: &str) -> Option<(&str, u32)> {
    let (name, d) = stem.rsplit_once('-')?;
    (d.len() == 8 && all_digits(d)).then_some((name, d.parse().ok()?))
}

/// Whether `s` is a whole number written in digits.
fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_name_is_its_stem_before_the_date() {
        assert!(named("society-20261129", "society"));
        assert!(named("society-20261129-2", "society"));
        assert!(!named("society2-20261129", "society"));
        assert!(!named("society-big-20261129", "society"));
        assert!(!named("society-2-20261129", "society"));
        assert!(named("society-2-20261129", "society-2"));
        assert!(!named("society", "society"));
        assert_eq!(
            stem(Path::new("/x/.society-20261129.partial")),
            Some("society-20261129")
        );
        assert_eq!(stem(Path::new("/x/society-20261129")), None);
        let o = |n: &str, d, i| (n.to_string(), d, i);
        assert_eq!(order("society-20261129"), o("society", 20261129, 1));
        assert_eq!(order("society-20261129-12"), o("society", 20261129, 12));
        assert_eq!(order("a-b-20261129-2"), o("a-b", 20261129, 2));
        assert_eq!(order("odd"), o("odd", 0, 0));
    }

    /// `--resume --name society` goes on with the society run, not with a later
    /// `society-relationships` run left unfinished in the same folder (whose folder sorts after).
    #[test]
    fn a_resume_takes_the_run_of_its_name_not_one_whose_name_begins_with_it() {
        let out = std::env::temp_dir().join(format!("simulacra-runs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        for d in [
            ".society-20261129.partial",
            ".society-relationships-20261201.partial",
            "society-20261101",
        ] {
            std::fs::create_dir_all(out.join(d)).unwrap();
        }
        let found = unfinished(&out, Some("society")).unwrap();
        assert_eq!(found, vec![out.join(".society-20261129.partial")]);
        assert_eq!(unfinished(&out, None).unwrap().len(), 2);
        let folder = crate::lab::runs::folder::Folder::open(&out, "society", true).unwrap();
        assert_eq!(folder.work, out.join(".society-20261129.partial"));
        assert_eq!(folder.done, out.join("society-20261129"));
        drop(folder);
        // Begun again the same day without --resume: the newer run is the one resumed
        // ("-2" sorts before "." by its bytes).
        for d in [
            ".society-20261129-2.partial",
            ".society-20261128-10.partial",
        ] {
            std::fs::create_dir_all(out.join(d)).unwrap();
        }
        let found = unfinished(&out, Some("society")).unwrap();
        let names: Vec<_> = found.iter().filter_map(|p| stem(p)).collect();
        assert_eq!(
            names,
            [
                "society-20261128-10",
                "society-20261129",
                "society-20261129-2"
            ]
        );
        let folder = crate::lab::runs::folder::Folder::open(&out, "society", true).unwrap();
        assert_eq!(folder.done, out.join("society-20261129-2"));
        drop(folder);
        let _ = std::fs::remove_dir_all(&out);
    }
}
