//! `generate town` and `generate cast`: towns and casts of any size from a seed, each checked
//! (the map checks, the scenario checks against its town) before it is written.

use super::{GenerateCommand, fail};
use std::path::Path;

/// Runs a `generate` subcommand.
pub(super) fn generate(command: GenerateCommand) -> i32 {
    let result = match command {
        GenerateCommand::Town {
            residents,
            seed,
            out,
        } => town(residents, seed, &out),
        GenerateCommand::Cast {
            map,
            residents,
            seed,
            out,
        } => cast(&map, residents, seed, &out),
    };
    match result {
        Ok(said) => {
            println!("{said}");
            0
        }
        Err(e) => fail(e),
    }
}

fn write(out: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    // Written beside, then renamed into place: a kill never leaves half a file.
    let part = out.with_extension("ron.part");
    std::fs::write(&part, text)
        .and_then(|_| std::fs::rename(&part, out))
        .map_err(|e| format!("{}: {e}", out.display()))
}

fn town(residents: usize, seed: u64, out: &Path) -> Result<String, String> {
    if residents == 0 {
        return Err("--residents: a town is made for at least one resident".into());
    }
    let most = crate::sim::map::generate::most_residents();
    if residents > most {
        return Err(format!(
            "--residents {residents}: a generated town holds at most {most} residents (its map is at most 1024×1024 tiles)"
        ));
    }
    let (text, map) = crate::sim::map::generate::generate_town(residents, seed, out)
        .map_err(|e| e.to_string())?;
    write(out, &text)?;
    let bedrooms = map
        .arenas
        .iter()
        .filter(|a| a.name.starts_with("room "))
        .count();
    Ok(format!(
        "wrote {}: {}×{} tiles, {} buildings and parks, {bedrooms} bedrooms; next: simulacra generate cast --map {} --residents {residents} --out config/scenarios/NAME.ron",
        out.display(),
        map.width,
        map.height,
        map.sectors.len(),
        out.display()
    ))
}

fn cast(map_arg: &str, residents: usize, seed: u64, out: &Path) -> Result<String, String> {
    let most = crate::agent::persona::MAX_RESIDENTS;
    if residents == 0 || residents > most {
        return Err(format!(
            "--residents {residents}: a cast is 1 to {most} residents"
        ));
    }
    let path = crate::data::resolve_data("maps", map_arg);
    let map = crate::sim::map::load_map(&path).map_err(|e| e.to_string())?;
    // A town in the data folder's maps/ is named by its name; any other by the path given.
    let maps_dir = crate::data::data_root().join("maps");
    let name = match (path.parent(), path.file_stem()) {
        (Some(dir), Some(stem))
            if dir.canonicalize().ok() == maps_dir.canonicalize().ok()
                && path.extension().is_some_and(|e| e == "ron") =>
        {
            stem.to_string_lossy().into_owned()
        }
        _ => map_arg.to_string(),
    };
    let scenario = crate::agent::cast::generate_cast(&map, &name, residents, seed)?;
    let text = crate::data_error::ron_text(
        &scenario,
        3,
        &format!(
            "{residents} residents generated for {} from seed {seed} (`simulacra generate cast --map {map_arg} --residents {residents} --seed {seed}`).\nFormat: config/scenarios/README.md.",
            map.world
        ),
    );
    crate::agent::persona::validate_scenario(out, &text, scenario.clone(), &map)
        .map_err(|e| format!("the generated cast does not pass the scenario checks: {e}"))?;
    write(out, &text)?;
    let working = scenario
        .residents
        .iter()
        .filter(|p| p.work.is_some())
        .count();
    Ok(format!(
        "wrote {}: {residents} residents ({working} working or studying) on {}; run it with `simulacra run --scenario {}`",
        out.display(),
        path.display(),
        out.display()
    ))
}
