//! `check`: validates a scenario, its map, the config and the prompt templates and says what it
//! loaded; with `--probe`, it also contacts every configured LLM backend and reports on those.

use super::{CheckArgs, fail};

/// `check`: exit code 0 when everything loads (with `--probe`, 1 when a backend fails), 2 when
/// something does not.
pub(super) fn check(args: &CheckArgs) -> i32 {
    let loaded = args.world.load().and_then(|sim| {
        // What a run will read and write: model files, scripted rules, recordings.
        sim.config.llm.check_files()?;
        Ok(sim)
    });
    match loaded {
        Ok(sim) if args.probe => {
            let (report, ok) = crate::llm::probe::probe(&sim.config.llm);
            print!("{report}");
            if ok { 0 } else { 1 }
        }
        Ok(sim) => {
            println!(
                "ok: {} ({} residents) on {} ({}×{} tiles, {} sectors, {} arenas); {} prompt templates in {}",
                sim.scenario.source.display(),
                sim.scenario.residents.len(),
                sim.map.source.display(),
                sim.map.width,
                sim.map.height,
                sim.map.sectors.len(),
                sim.map.arenas.len(),
                crate::cognition::ask::prompts::SPECS.len(),
                crate::data::resolve_path(&sim.config.cognition.prompts).display()
            );
            0
        }
        Err(e) => fail(e),
    }
}
