//! The town drawn with bevy_ecs_tilemap: the town's own Tiled art when it has some and its
//! images are there ([`crate::game::tiled_art`]); otherwise our art, a ground layer (every tile) and a
//! furniture layer (object tiles only), from the [`WorldMap`] resource.

use crate::game::shared::TILE;
use crate::game::shared::tile_pos;
use crate::game::world::art::BED_FOOT;
use crate::game::world::art::furniture_index;
use crate::game::world::art::terrain_index;
use crate::sim::map::objects::Furniture;
use crate::sim::map::{Tile, WorldMap};
use bevy::prelude::*;
use bevy_ecs_tilemap::prelude::*;

/// Spawns the town's tile layers: its own Tiled art, or ours. Why the Tiled art could not be
/// drawn (missing images) is said once, on standard error and in the console.
pub fn spawn_town(
    mut commands: Commands,
    map: Res<WorldMap>,
    mut images: ResMut<Assets<Image>>,
    mut console: ResMut<crate::play::ConsoleLog>,
) {
    if let Some(tiled) = map.art.as_deref() {
        let mut say = |text: String| {
            eprintln!("{text}");
            console.out(text);
        };
        for n in &tiled.notes {
            say(format!("art: {n}"));
        }
        match crate::game::world::tiled_art::build_atlas(tiled) {
            Ok(atlas) if !atlas.slots.is_empty() => {
                for n in &atlas.notes {
                    say(format!("art: {n}"));
                }
                crate::game::world::tiled_art::spawn_art(
                    &mut commands,
                    &map,
                    tiled,
                    atlas,
                    &mut images,
                );
                return;
            }
            Ok(_) => say(format!(
                "art: {} has no tiles that can be drawn; drawing the town with our own art",
                tiled.source.display()
            )),
            Err(missing) => say(format!(
                "art: {} tileset image(s) of {} are missing or unreadable, so the town is drawn with our own art: {}",
                missing.len(),
                tiled.source.display(),
                missing.join(", ")
            )),
        }
    }
    spawn_our_art(&mut commands, &map, &mut images);
}

/// Our own art: a ground layer from the terrain and a furniture layer from the objects.
fn spawn_our_art(commands: &mut Commands, map: &WorldMap, images: &mut Assets<Image>) {
    let atlas = images.add(crate::game::world::sprites::load_atlas("tiles.png"));
    let size = TilemapSize {
        x: map.width as u32,
        y: map.height as u32,
    };
    let tile_size = TilemapTileSize {
        x: TILE as f32,
        y: TILE as f32,
    };
    let grid_size: TilemapGridSize = tile_size.into();
    for layer in 0..2 {
        let layer_entity = commands.spawn_empty().id();
        let mut storage = TileStorage::empty(size);
        for row in 0..map.height {
            for x in 0..map.width {
                let t = Tile::new(x, row);
                let index = if layer == 0 {
                    let variant = (x as u32).wrapping_mul(7) ^ (row as u32).wrapping_mul(13);
                    map.terrain(t).map(|k| terrain_index(k, variant % 5 / 4))
                } else {
                    map.object_at(t).map(|o| {
                        // The tile below a bed's pillow end is drawn as the blanket.
                        let above = map.object_at(Tile::new(x, row - 1));
                        if o.furniture == Furniture::Bed
                            && above.is_some_and(|a| a.furniture == Furniture::Bed)
                        {
                            BED_FOOT
                        } else {
                            furniture_index(o.furniture)
                        }
                    })
                };
                let Some(index) = index else { continue };
                let pos = tile_pos(map, t);
                let tile = commands
                    .spawn(TileBundle {
                        position: pos,
                        tilemap_id: TilemapId(layer_entity),
                        texture_index: TileTextureIndex(index),
                        ..default()
                    })
                    .id();
                storage.set(&pos, tile);
            }
        }
        commands.entity(layer_entity).insert((
            Name::new(if layer == 0 { "ground" } else { "furniture" }),
            TilemapBundle {
                grid_size,
                map_type: TilemapType::Square,
                size,
                storage,
                texture: TilemapTexture::Single(atlas.clone()),
                tile_size,
                transform: Transform::from_xyz(0.0, 0.0, layer as f32),
                ..default()
            },
        ));
    }
}

/// Adds this part of the window: its resources and systems, each in its place in the frame.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Startup, spawn_town);
}
