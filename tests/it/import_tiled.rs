//! Towns drawn in Tiled for the original Generative Agents: the fixture town as `.tmj` and
//! `.tmx` loads as the same town as its matrix folder, with its art as data; a map file of ours
//! keeps the art; malformed maps give errors naming the file, the layer and the cell; a scripted
//! hour plays in the Tiled town with the imported people. Fixtures: `tests/fixtures/original/`
//! (`make_fixtures.py` writes them).

use crate::import_original::assert_same_town;
use simulacra::data::data_root;
use simulacra::data_error::DataError;
use simulacra::sim::map::original::load_matrix;
use simulacra::sim::map::tiled::{FLIP_H, load_tiled};
use simulacra::sim::map::{Tile, load_map, load_map_reporting, write_ron_beside};
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    data_root().join("tests/fixtures/original/tiny_town")
}

fn tmj() -> PathBuf {
    fixture().join("visuals/tiny_town.tmj")
}

fn tmx() -> PathBuf {
    fixture().join("visuals/tiny_town.tmx")
}

#[test]
fn a_tiled_town_as_json_and_as_tmx_is_the_same_town_as_its_matrix_folder() {
    let (matrix, _) = load_matrix(&fixture().join("matrix")).expect("matrix fixture");
    let (json, report) = load_tiled(&tmj()).expect("the .tmj loads");
    let (xml, _) = load_tiled(&tmx()).expect("the .tmx loads");
    assert_same_town(&matrix, &json);
    assert_same_town(&matrix, &xml);
    // Same ground too: both are derived from the same collision and sector layers.
    for y in 0..matrix.height {
        for x in 0..matrix.width {
            let t = Tile::new(x, y);
            assert_eq!(matrix.terrain(t), json.terrain(t), "terrain at {t}");
        }
    }
    assert!(!json.objects_block);
    assert_eq!(json.source, tmj());
    let text = report.to_string();
    assert!(text.contains("special_blocks"), "{text}");
    assert!(
        text.contains("art: 6 layer(s) drawn (1 above people)"),
        "{text}"
    );

    // The art: every visible layer that is not a block layer, bottom first, by name (the
    // trailing space of "Interior Furniture L2 " is the_ville's and is kept).
    let art = json.art.as_deref().expect("a Tiled town has art");
    let names: Vec<&str> = art.layers.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Bottom Ground",
            "Exterior Decoration L1",
            "Interior Ground",
            "Wall",
            "Interior Furniture L2 ",
            "Foreground L1"
        ]
    );
    let above: Vec<bool> = art.layers.iter().map(|l| l.above_people).collect();
    assert_eq!(above, [false, false, false, false, false, true]);
    assert_eq!((art.tile_width, art.tile_height), (32, 32));
    assert!(
        art.missing_images().is_empty(),
        "{:?}",
        art.missing_images()
    );
    // Flip bits stay on art tiles (the window flips them); the ground alternates.
    let ground = &art.layers[0].gids;
    assert_eq!(ground[0], 1);
    assert_eq!(ground[1], 1 | FLIP_H);
    assert_eq!(art.tileset_of(ground[1]), Some((0, 0)));
    // The transparent colour is read; image paths are absolute, beside the map.
    let grass = &art.tilesets[0];
    assert_eq!(grass.transparent, Some([255, 0, 255]));
    assert_eq!(
        grass.image.as_deref(),
        Some(fixture().join("visuals/map_assets/grass.png").as_path())
    );
    // The .tmx (CSV and base64+zlib data, read by the tiled crate) has the same art.
    let xml_art = xml.art.as_deref().unwrap();
    assert_eq!(xml_art.layers, art.layers);
    assert_eq!(xml_art.tilesets, art.tilesets);
}

#[test]
fn a_tiled_town_is_a_map_wherever_a_map_is_asked_for_and_keeps_its_art_in_our_format() {
    // load_map (--map, a scenario's map:, simulacra check) takes the Tiled file.
    let town = load_map(&tmj()).expect("--map town.tmj");
    assert!(town.art.is_some());
    // A folder that holds one Tiled map and its special_blocks/ is the explicit way.
    let dir = crate::temp_dir("tiled-folder");
    std::fs::copy(tmj(), dir.join("town.tmj")).unwrap();
    crate::copy_dir(
        &fixture().join("matrix/special_blocks"),
        &dir.join("special_blocks"),
    );
    let from_folder = load_map(&dir).expect("the folder holding the map and its legends");
    assert_same_town(&town, &from_folder);
    // The visuals folder holds two maps: which one is meant is asked.
    let e = load_map(&fixture().join("visuals")).expect_err("two Tiled maps");
    assert!(
        e.message.contains("tiny_town.tmj") && e.message.contains("tiny_town.tmx"),
        "{e}"
    );

    // `simulacra import map town.tmj --out maps/x.ron` writes our format, which names the
    // Tiled file for its art (relative to the written file when they share a folder near by),
    // so the converted town and a save of it keep their pictures.
    let root = crate::temp_dir("tiled-import");
    crate::copy_dir(&fixture(), &root);
    let out = root.join("maps");
    std::fs::create_dir_all(&out).unwrap();
    let (map, _) = load_map_reporting(&root.join("visuals/tiny_town.tmj")).unwrap();
    let text = write_ron_beside(&map, "test", Some(&out));
    assert!(
        text.contains("art: \"../visuals/tiny_town.tmj\","),
        "{text}"
    );
    // Written elsewhere (a save), the Tiled file is named by its absolute path.
    let elsewhere = simulacra::sim::map::write_ron(&map, "save");
    assert!(
        elsewhere.contains(&format!(
            "art: \"{}\"",
            root.join("visuals/tiny_town.tmj").display()
        )),
        "{elsewhere}"
    );
    let file = out.join("tiny.ron");
    std::fs::write(&file, &text).unwrap();
    let back = load_map(&file).expect("the written map loads");
    assert_same_town(&town, &back);
    let back_art = back.art.as_deref().expect("the art comes back");
    assert_eq!(back_art.layers, town.art.as_deref().unwrap().layers);
    assert!(back_art.notes.is_empty(), "{:?}", back_art.notes);
    // A Tiled file that has gone away is no error for a map of ours: our art is drawn instead,
    // and the note says why.
    let moved = text.replacen("art: \"", "art: \"gone/", 1);
    std::fs::write(&file, &moved).unwrap();
    let without = load_map(&file).expect("still loads");
    let art = without.art.as_deref().unwrap();
    assert!(art.layers.is_empty());
    assert!(art.notes[0].contains("our own art"), "{:?}", art.notes);
}

/// A copy of the Tiled fixture in the original's layout (`visuals/` and `matrix/`), with the
/// JSON map changed by `edit`; returns the map's path.
fn tiled_copy(name: &str, images: bool, edit: impl Fn(&mut serde_json::Value)) -> PathBuf {
    let dir = crate::temp_dir(&format!("tiled-{name}"));
    crate::copy_dir(
        &fixture().join("matrix/special_blocks"),
        &dir.join("matrix/special_blocks"),
    );
    if images {
        crate::copy_dir(
            &fixture().join("visuals/map_assets"),
            &dir.join("visuals/map_assets"),
        );
    }
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmj()).unwrap()).unwrap();
    edit(&mut v);
    let path = dir.join("visuals/tiny_town.tmj");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    path
}

fn layer<'a>(v: &'a mut serde_json::Value, name: &str) -> &'a mut serde_json::Value {
    v["layers"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|l| l["name"] == name)
        .unwrap()
}

fn refused(path: &Path) -> DataError {
    match load_map(path) {
        Ok(_) => panic!("{} loaded", path.display()),
        Err(e) => e,
    }
}

#[test]
fn malformed_tiled_maps_name_the_file_the_layer_and_the_cell() {
    // A missing layer: the error lists the layers there are.
    let p = tiled_copy("missing-layer", false, |v| {
        v["layers"]
            .as_array_mut()
            .unwrap()
            .retain(|l| l["name"] != "Arena Blocks");
    });
    let e = refused(&p);
    assert_eq!(e.file, p, "{e}");
    assert_eq!(e.field, "layer 'Arena Blocks'", "{e}");
    assert!(e.message.contains("'Sector Blocks'"), "{e}");

    // A layer with a cell too few, at the line where the layer is.
    let p = tiled_copy("ragged", false, |v| {
        layer(v, "Sector Blocks")["data"]
            .as_array_mut()
            .unwrap()
            .pop();
    });
    let e = refused(&p);
    assert_eq!(e.field, "layer 'Sector Blocks'", "{e}");
    assert!(
        e.message.contains("599 cells") && e.message.contains("600"),
        "{e}"
    );
    let text = std::fs::read_to_string(&p).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("\"Sector Blocks\""))
        .unwrap()
        + 1;
    assert_eq!(e.line, line, "{e}");

    // An art tile whose gid is in no tileset.
    let p = tiled_copy("unknown-gid", false, |v| {
        layer(v, "Wall")["data"][31] = 5000.into();
    });
    let e = refused(&p);
    assert_eq!(e.field, "layer 'Wall', cell 31 (x 1, y 1)", "{e}");
    assert!(
        e.message.contains("5000") && e.message.contains("no tileset"),
        "{e}"
    );

    // A block tile whose id is not in its legend.
    let p = tiled_copy("unknown-id", false, |v| {
        layer(v, "Object Interaction Blocks")["data"][31] = 40000.into();
    });
    let e = refused(&p);
    assert_eq!(e.file, p, "{e}");
    assert_eq!(
        e.field, "layer 'Object Interaction Blocks', cell 31 (x 1, y 1)",
        "{e}"
    );
    assert!(e.message.contains("game_object_blocks.csv"), "{e}");

    // An arena painted outside every sector.
    let p = tiled_copy("arena-outside", false, |v| {
        layer(v, "Arena Blocks")["data"][12 * 30 + 3] = 32171.into();
    });
    let e = refused(&p);
    assert_eq!(e.field, "layer 'Arena Blocks', cell 363 (x 3, y 12)", "{e}");
    assert!(e.message.contains("layer 'Sector Blocks'"), "{e}");

    // A legend id painted on no tile names the legend and the layer.
    let p = tiled_copy("unused-id", false, |v| {
        let d = layer(v, "Spawning Blocks")["data"].as_array_mut().unwrap();
        for c in d.iter_mut() {
            if *c == 32295 {
                *c = 0.into();
            }
        }
    });
    let e = refused(&p);
    assert!(
        e.file
            .ends_with("special_blocks/spawning_location_blocks.csv"),
        "{e}"
    );
    assert!(e.message.contains("layer 'Spawning Blocks'"), "{e}");

    // No legends beside the map: where they were looked for.
    let dir = crate::temp_dir("tiled-no-legends");
    std::fs::copy(tmj(), dir.join("town.tmj")).unwrap();
    let e = refused(&dir.join("town.tmj"));
    assert!(e.message.contains("special_blocks"), "{e}");
    assert!(e.message.contains("matrix"), "{e}");

    // An infinite map, and layer data packed with zstd (not read).
    let p = tiled_copy("infinite", false, |v| v["infinite"] = true.into());
    assert_eq!(refused(&p).field, "infinite");
    let p = tiled_copy("zstd", false, |v| {
        layer(v, "Bottom Ground")["compression"] = "zstd".into();
    });
    let e = refused(&p);
    assert_eq!(e.field, "layer 'Bottom Ground'", "{e}");
    assert!(e.message.contains("zstd"), "{e}");

    // Not JSON at all.
    let dir = crate::temp_dir("tiled-not-json");
    std::fs::write(dir.join("town.tmj"), "{\"width\": 30,\n oops").unwrap();
    let e = refused(&dir.join("town.tmj"));
    assert_eq!(e.line, 2, "{e}");

    // A .tmx with a short layer is refused, not a panic (the tiled crate would index past it).
    let dir = crate::temp_dir("tiled-tmx-ragged");
    crate::copy_dir(
        &fixture().join("matrix/special_blocks"),
        &dir.join("matrix/special_blocks"),
    );
    std::fs::create_dir_all(dir.join("visuals")).unwrap();
    let text = std::fs::read_to_string(tmx()).unwrap();
    let at = text.find("name=\"Arena Blocks\"").unwrap();
    let cut = at + text[at..].find("\n0,").unwrap();
    let short = format!("{}{}", &text[..cut], &text[cut + 3..]);
    std::fs::write(dir.join("visuals/town.tmx"), &short).unwrap();
    let e = refused(&dir.join("visuals/town.tmx"));
    assert_eq!(e.field, "layer 'Arena Blocks'", "{e}");
    assert!(e.message.contains("599 cells"), "{e}");
}

#[test]
fn missing_tileset_images_are_no_error_and_are_named_for_the_window() {
    let p = tiled_copy("no-images", false, |_| {});
    let (map, report) = load_map_reporting(&p).expect("loads without its pictures");
    let art = map.art.as_deref().unwrap();
    let missing = art.missing_images();
    // The six art tilesets; the block tilesets are never drawn, so they are not needed.
    assert_eq!(missing.len(), 6, "{missing:?}");
    assert!(missing.iter().all(|m| m.starts_with(p.parent().unwrap())));
    assert!(
        report.to_string().contains("6 image(s) missing"),
        "{report}"
    );
}

#[test]
fn the_people_of_a_base_folder_play_an_hour_in_the_tiled_town() {
    use bevy::prelude::With;
    use simulacra::agent::{GridPos, Identity, Resident};
    use simulacra::import::{import_people, scenario_text};
    let map = load_map(&tmx()).unwrap();
    let base = data_root().join("tests/fixtures/original/tiny_base");
    let (scenario, _) = import_people(&base, &map, &tmx().display().to_string()).expect("imports");
    assert_eq!(scenario.residents.len(), 2);
    let dir = crate::temp_dir("tiled-scenario");
    let path = dir.join("tiny.ron");
    std::fs::write(&path, scenario_text(&scenario, "test")).unwrap();
    let mut config = crate::scripted_config();
    config.sim.sec_per_step = 10;
    config.saves.dir = dir.join("saves").display().to_string();
    config.saves.autosave_minutes = 0;
    let mut sim = simulacra::SimPlugin::load(&path.display().to_string(), None, config.clone())
        .expect("the scenario loads on the Tiled map");
    assert!(sim.map.art.is_some(), "the scenario's map: names the .tmx");
    sim.scenario.start = simulacra::sim::time::GameTime::parse("2023-02-13 09:00").unwrap();
    let mut app = simulacra::headless_app(sim);
    let positions = |app: &mut bevy::prelude::App| {
        let world = app.world_mut();
        let mut q = world.query_filtered::<(&Identity, &GridPos), With<Resident>>();
        let mut v: Vec<(String, Tile)> = q
            .iter(world)
            .map(|(i, p)| (i.name.clone(), p.tile))
            .collect();
        v.sort();
        v
    };
    simulacra::run_steps(&mut app, 1);
    let start = positions(&mut app);
    simulacra::run_steps(&mut app, 359);
    let end = positions(&mut app);
    assert_eq!(end.len(), 2);
    assert_ne!(start, end, "nobody moved in an hour");
    let map = app
        .world()
        .resource::<simulacra::sim::map::WorldMap>()
        .clone();
    for (who, t) in &end {
        assert!(map.walkable(*t), "{who} stands on a wall at {t}");
    }
    // A save writes the town as a map file of ours, which names the Tiled file: resumed, the
    // town still has its art.
    let saved = simulacra::save::save_named(app.world_mut(), "tiled").expect("saves");
    let again = simulacra::SimPlugin::from_save(&saved, config).expect("the save loads");
    let art = again
        .map
        .art
        .as_deref()
        .expect("the resumed town keeps its art");
    assert_eq!(art.layers, map.art.as_deref().unwrap().layers);
    assert!(art.notes.is_empty(), "{:?}", art.notes);
}
