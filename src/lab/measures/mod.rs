//! The paper's measurements, each owning its whole run (`simulacra lab <name>`): what it reads,
//! the folder it works in, the towns it runs and the report it writes. What they share is the
//! run's skeleton here: the world of a lab with `--set` applied, towns by seed, the folder opened
//! for a new or resumed run, its inputs, and the report written and the folder finished.

pub mod diffusion;
pub mod interviews;
pub mod invitations;
pub mod party;
pub mod relationships;

use crate::SimPlugin;
use crate::config::GameConfig;
use crate::lab::report;
use crate::lab::report::stats::clock_words;
use crate::lab::runs::folder::Folder;
use crate::lab::runs::guard;
use std::path::PathBuf;
use std::time::Instant;

/// What every lab is given: the world it runs (loaded afresh for each town), its name, where its
/// folder goes, the config changes, whether it resumes, and when it began.
pub struct Common<'a> {
    /// Loads the world selection (a scenario, or a save).
    pub load: &'a dyn Fn() -> Result<SimPlugin, String>,
    /// The run's name (its kind's when none): the report goes to `<out>/<name>-<date>/`.
    pub name: Option<String>,
    /// Where report folders go.
    pub out: PathBuf,
    /// `--set` assignments.
    pub sets: Vec<String>,
    /// The aids turned on (`--aids`: `none`, `all`, or names), over the config's; `None`: the
    /// config's (none unless it says so).
    pub aids: Option<String>,
    /// Go on with the unfinished run of this name.
    pub resume: bool,
    /// Wall minutes between a town's checkpoints within a game hour.
    pub checkpoint_minutes: u64,
    /// When the command began (the report's wall time).
    pub started: Instant,
}

impl Common<'_> {
    /// The world and config of the lab, with `--set` applied and the model's files checked.
    pub fn world(&self) -> Result<SimPlugin, String> {
        let mut sim = (self.load)()?;
        crate::lab::town::apply_sets(&mut sim.config, &self.sets)?;
        if let Some(list) = &self.aids {
            sim.config.cognition.aids =
                crate::cognition::config::Aids::parse(list).map_err(|e| format!("--aids: {e}"))?;
        }
        sim.config.llm.check_files()?;
        Ok(sim)
    }

    /// The run's folder: a new one named after the run (or `kind`), or the unfinished one of
    /// that name (`resume`).
    pub fn folder(&self, kind: &str) -> Result<Folder, String> {
        crate::lab::town::set_checkpoint_every(std::time::Duration::from_secs(
            self.checkpoint_minutes.saturating_mul(60),
        ));
        let name = self.name.clone().unwrap_or_else(|| kind.to_string());
        Folder::open(&self.out, &name, self.resume)
    }

    /// `seeds` towns of the lab's world (checked: 1 to 20), each with its own seed; with more
    /// than one, conversation lines are sampled at temperature 0.7 unless the config sets one.
    pub fn seeded(&self, seeds: u32) -> Result<Vec<(u32, SimPlugin)>, String> {
        if seeds == 0 || seeds > 20 {
            return Err("--seeds: between 1 and 20".into());
        }
        let mut towns = Vec::new();
        for s in 1..=seeds {
            let mut sim = self.world()?;
            if seeds > 1 {
                sim.config.cognition.seed = s;
                if sim.config.cognition.talk_temperature == 0.0 {
                    sim.config.cognition.talk_temperature = 0.7;
                }
            }
            towns.push((s, sim));
        }
        Ok(towns)
    }
}

/// Game days as whole game hours (checked: 0 to 30 days); `what` names the option.
pub fn hours(days: f64, what: &str) -> Result<u32, String> {
    if !(0.0..=30.0).contains(&days) {
        return Err(format!("{what}: {days} is not between 0 and 30"));
    }
    Ok((days * 24.0).round() as u32)
}

/// What a report says of the builds its sittings ran on (`build.txt`).
fn builds_words(builds: &[String]) -> String {
    match builds {
        [] => "The build is not recorded (the run began before builds were).".into(),
        [one] => format!("Built from source {one} (`build.txt`, `simulacra --version`)."),
        [first, rest @ ..] => format!(
            "**The sittings ran on more than one build** (resumed with `--other-build`): begun on source {first}, then {} (`build.txt`; each sitting's in `command.txt`); the code differed between them, so the report may mix what different code gives.",
            rest.join(", then ")
        ),
    }
}

/// Writes `report.md` (a title, the model note, the sections) and turns the working folder into
/// the report folder; returns where it is.
pub fn finish_report(
    folder: &Folder,
    title: &str,
    config: &GameConfig,
    intro: &str,
    sections: &[String],
    wall_s: f64,
) -> Result<PathBuf, String> {
    let mut md = format!("# {title}\n\n");
    md.push_str(&report::model_note(config));
    md.push_str(intro);
    md.push_str(&format!(
        "\nWall time of this invocation: {}. What was run: `command.txt`, `config.ron`, `scenario.ron`, `prompts/`, `models.txt`; raw data: the `.json` and `.csv` files. {}\n\n",
        clock_words(wall_s),
        builds_words(&guard::builds(&folder.work))
    ));
    for s in sections {
        md.push_str(s);
        md.push('\n');
    }
    folder.write_text("report.md", &md)?;
    folder.finish()
}
