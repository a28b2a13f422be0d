//! A town's own Tiled art ([`TiledArt`]) drawn with bevy_ecs_tilemap: each art layer is a
//! tilemap (one per atlas page it uses), bottom first, with layers named `Foreground…` above
//! people, as the original draws them.
//!
//! bevy_ecs_tilemap takes one texture per tilemap and, without its `atlas` feature, turns that
//! texture into a GPU array with one layer per tile, so the original's tilesets (Room_Builder
//! alone has 8,284 tiles; interiors_pt1 is 10,016 pixels tall) cannot be used as they are.
//! Instead the tiles the map actually uses are copied on the CPU into pages of at most 256
//! tiles (the smallest array-layer limit wgpu allows), with Tiled's flips applied and the
//! tileset's transparent colour keyed out. One tileset image is decoded at a time.

use crate::game::shared::TILE;
use crate::sim::map::tiled::{FLIP_D, FLIP_H, FLIP_V, TiledArt};
use crate::sim::map::{Tile, WorldMap};
use bevy::asset::RenderAssetUsages;
use bevy::image::{CompressedImageFormats, ImageSampler, ImageType};
use bevy::prelude::*;
use bevy_ecs_tilemap::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// Tiles per page side (16 × 16 = 256 tiles, within every adapter's texture-array limit).
const PAGE_SIDE: u32 = 16;
const PAGE_TILES: u32 = PAGE_SIDE * PAGE_SIDE;
/// z of the art layers below people (people stand at about 10, object marks at 9.5).
const Z_BELOW: f32 = 0.0;
/// z of the layers above people: above a person's body (≤ 11) and below names and speech (≥ 12).
const Z_ABOVE: f32 = 11.5;

/// The used tiles copied into pages, and where each gid (flips included) went.
pub struct Atlas {
    /// Page images, RGBA.
    pub pages: Vec<Image>,
    /// Raw gid (with flip bits) → (page, index in the page).
    pub slots: BTreeMap<u32, (usize, u32)>,
    /// What could not be drawn, one line each.
    pub notes: Vec<String>,
}

/// Decodes a tileset image to RGBA pixels (width, height, bytes).
fn decode_png(path: &std::path::Path) -> Result<(u32, u32, Vec<u8>), String> {
    let bytes = crate::data::read_bytes_bounded(path, crate::data::MAX_TEXT_BYTES)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("png")
        .to_ascii_lowercase();
    let image = Image::from_buffer(
        &bytes,
        ImageType::Extension(&ext),
        CompressedImageFormats::NONE,
        true,
        ImageSampler::Default,
        RenderAssetUsages::default(),
    )
    .map_err(|e| format!("{}: cannot decode the image: {e}", path.display()))?;
    let rgba = image
        .try_into_dynamic()
        .map_err(|e| format!("{}: cannot decode the image: {e}", path.display()))?
        .to_rgba8();
    Ok((rgba.width(), rgba.height(), rgba.into_raw()))
}

/// Copies the tiles the art uses into pages. `Err` lists images that are missing or cannot be
/// decoded (the caller then draws our own art). Only tilesets the art can draw are read
/// ([`TiledArt::drawable`]: tiles of at most 256 pixels, so a page stays within 4,096 pixels a
/// side); a tile that does not lie wholly inside its image is left out and counted in a note.
pub fn build_atlas(art: &TiledArt) -> Result<Atlas, Vec<String>> {
    let (tw, th) = (art.tile_width, art.tile_height);
    let mut notes = Vec::new();
    // Distinct raw gids per tileset, for the tilesets that can be drawn.
    let mut by_tileset: BTreeMap<usize, BTreeSet<u32>> = BTreeMap::new();
    for l in &art.layers {
        for g in &l.gids {
            if let Some((t, _)) = art.tileset_of(*g)
                && art.drawable(&art.tilesets[t])
            {
                by_tileset.entry(t).or_default().insert(*g);
            }
        }
    }
    let missing: Vec<String> = by_tileset
        .keys()
        .filter_map(|t| art.tilesets[*t].image.as_ref())
        .filter(|p| !p.is_file())
        .map(|p| p.display().to_string())
        .collect();
    if !missing.is_empty() {
        return Err(missing);
    }
    // Drawable tiles are at most MAX_DRAWN_TILE pixels a side, so these stay small.
    let page_w = PAGE_SIDE * tw;
    let page_bytes = (page_w * PAGE_SIDE * th * 4) as usize;
    // Pages are added as tiles that lie in their images arrive, so a map that claims many
    // tiles its images do not have costs nothing.
    let mut pages: Vec<Vec<u8>> = Vec::new();
    let mut slots = BTreeMap::new();
    let mut next = 0u32;
    let mut failed = Vec::new();
    for (t, gids) in &by_tileset {
        let ts = &art.tilesets[*t];
        let Some(path) = &ts.image else { continue };
        let (iw, ih, px) = match decode_png(path) {
            Ok(d) => d,
            Err(e) => {
                failed.push(e);
                continue;
            }
        };
        let mut outside = 0usize;
        for g in gids {
            let local = (g & crate::sim::map::layers::GID_MASK) - ts.first_gid;
            let Some((ox, oy)) = ts.tile_origin(local, iw, ih) else {
                outside += 1;
                continue; // not drawn
            };
            let (page, index) = ((next / PAGE_TILES) as usize, next % PAGE_TILES);
            next += 1;
            if page == pages.len() {
                pages.push(vec![0u8; page_bytes]);
            }
            slots.insert(*g, (page, index));
            let (h, v, d) = (
                g & FLIP_H != 0,
                g & FLIP_V != 0,
                g & FLIP_D != 0 && tw == th,
            );
            let (cx, cy) = ((index % PAGE_SIDE) * tw, (index / PAGE_SIDE) * th);
            let out = &mut pages[page];
            for dy in 0..th {
                for dx in 0..tw {
                    // Tiled flips diagonally first, then horizontally, then vertically: undo
                    // them in reverse to find the source pixel.
                    let (mut x, mut y) = (dx, dy);
                    if v {
                        y = th - 1 - y;
                    }
                    if h {
                        x = tw - 1 - x;
                    }
                    if d {
                        std::mem::swap(&mut x, &mut y);
                    }
                    // Inside the image (tile_origin checked it), so within its pixels.
                    let s = ((oy + y) as usize * iw as usize + (ox + x) as usize) * 4;
                    let mut p = [px[s], px[s + 1], px[s + 2], px[s + 3]];
                    if ts.transparent == Some([p[0], p[1], p[2]]) {
                        p = [0, 0, 0, 0];
                    }
                    let o = (((cy + dy) * page_w + cx + dx) * 4) as usize;
                    out[o..o + 4].copy_from_slice(&p);
                }
            }
        }
        if outside > 0 {
            notes.push(format!(
                "{}: {outside} tile(s) the map uses lie outside the image ({iw}×{ih}) and are not drawn",
                path.display()
            ));
        }
    }
    if !failed.is_empty() {
        return Err(failed);
    }
    // The last page only as tall as its rows of tiles.
    let on_last = next - (pages.len() as u32).saturating_sub(1) * PAGE_TILES;
    if let Some(last) = pages.last_mut() {
        last.truncate((on_last.div_ceil(PAGE_SIDE) * th * page_w * 4) as usize);
    }
    let pages = pages
        .into_iter()
        .map(|data| {
            let h = (data.len() as u32 / 4) / page_w;
            crate::game::world::art::rgba_image(page_w, h, data)
        })
        .collect();
    Ok(Atlas {
        pages,
        slots,
        notes,
    })
}

/// Spawns the art layers as tilemaps, lined up with [`crate::game::shared::tile_to_world`].
pub fn spawn_art(
    commands: &mut Commands,
    map: &WorldMap,
    art: &TiledArt,
    atlas: Atlas,
    images: &mut Assets<Image>,
) {
    let (tw, th) = (art.tile_width as f32, art.tile_height as f32);
    let handles: Vec<Handle<Image>> = atlas.pages.into_iter().map(|p| images.add(p)).collect();
    let size = TilemapSize {
        x: map.width as u32,
        y: map.height as u32,
    };
    let tile_size = TilemapTileSize { x: tw, y: th };
    let grid_size: TilemapGridSize = tile_size.into();
    // Our world draws a tile TILE pixels wide; the art's tiles are scaled to fit.
    let scale = Vec3::new(TILE as f32 / tw, TILE as f32 / th, 1.0);
    let (mut below, mut above) = (0usize, 0usize);
    for layer in &art.layers {
        let z = if layer.above_people {
            above += 1;
            Z_ABOVE + above as f32 * 0.01
        } else {
            below += 1;
            Z_BELOW + below as f32 * 0.1
        };
        let colour = TileColor(Color::srgba(1.0, 1.0, 1.0, layer.opacity));
        // One tilemap per page this layer uses.
        let mut maps: BTreeMap<usize, (Entity, TileStorage)> = BTreeMap::new();
        for (i, g) in layer.gids.iter().enumerate() {
            let Some(&(page, index)) = atlas.slots.get(g) else {
                continue;
            };
            let t = Tile::new(i as i32 % map.width, i as i32 / map.width);
            if !map.in_bounds(t) {
                continue;
            }
            let (entity, storage) = maps
                .entry(page)
                .or_insert_with(|| (commands.spawn_empty().id(), TileStorage::empty(size)));
            let pos = crate::game::shared::tile_pos(map, t);
            let tile = commands
                .spawn(TileBundle {
                    position: pos,
                    tilemap_id: TilemapId(*entity),
                    texture_index: TileTextureIndex(index),
                    color: colour,
                    ..default()
                })
                .id();
            storage.set(&pos, tile);
        }
        for (page, (entity, storage)) in maps {
            commands.entity(entity).insert((
                Name::new(format!("art '{}' page {page}", layer.name.trim())),
                TilemapBundle {
                    grid_size,
                    map_type: TilemapType::Square,
                    size,
                    storage,
                    texture: TilemapTexture::Single(handles[page].clone()),
                    tile_size,
                    transform: Transform::from_xyz(0.0, 0.0, z + page as f32 * 0.001)
                        .with_scale(scale),
                    ..default()
                },
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::map::tiled::{ArtLayer, ArtTileset};
    use std::path::PathBuf;

    /// The fixture's block tileset: 320×256 pixels, 10 × 8 tiles of 32.
    fn blocks(first_gid: u32, columns: u32, margin: u32) -> ArtTileset {
        ArtTileset {
            name: "blocks".into(),
            first_gid,
            // More than the picture holds, as a damaged or hand-edited file may say.
            tile_count: 100_000,
            columns,
            tile_width: 32,
            tile_height: 32,
            margin,
            spacing: 0,
            // From the folder the tests run in, not a path fixed at build time (a shared target
            // folder may hold a binary built from another checkout).
            image: Some(
                crate::data::data_root().join(
                    "tests/fixtures/original/tiny_town/visuals/map_assets/blocks/blocks_1.png",
                ),
            ),
            // Unknown: only the decoded image's own size limits the tiles.
            image_width: 0,
            image_height: 0,
            transparent: None,
        }
    }

    #[test]
    fn tiles_outside_their_image_are_left_out_and_nothing_overflows() {
        let art = TiledArt {
            source: PathBuf::from("/x.tmj"),
            width: 6,
            height: 1,
            tile_width: 32,
            tile_height: 32,
            tilesets: vec![blocks(1, 10, 0), blocks(200_000, u32::MAX, u32::MAX - 5)],
            layers: vec![ArtLayer {
                name: "ground".into(),
                above_people: false,
                opacity: 1.0,
                // In the image: the first and last tile (also flipped); past it: the 81st and
                // the 500th; the second tileset's geometry overflows.
                gids: vec![1, FLIP_H | 1, 80, 81, 500, 200_001],
            }],
            notes: Vec::new(),
        };
        let atlas = build_atlas(&art).expect("the image is there");
        let mut used: Vec<u32> = atlas.slots.keys().copied().collect();
        used.sort();
        assert_eq!(used, vec![1, 80, FLIP_H | 1]);
        assert_eq!(atlas.pages.len(), 1);
        // One row of three tiles: a page 16 tiles wide and one tall.
        assert_eq!(
            (atlas.pages[0].width(), atlas.pages[0].height()),
            (16 * 32, 32)
        );
        let notes = atlas.notes.join(" | ");
        assert!(
            notes.contains("2 tile(s)") && notes.contains("1 tile(s)"),
            "{notes}"
        );
        assert!(notes.contains("320×256"), "{notes}");
    }

    #[test]
    fn tiles_too_large_for_a_page_are_not_drawn() {
        let mut ts = blocks(1, 1, 0);
        (ts.tile_width, ts.tile_height) = (320, 256);
        let art = TiledArt {
            source: PathBuf::from("/x.tmj"),
            width: 1,
            height: 1,
            tile_width: 320,
            tile_height: 256,
            tilesets: vec![ts],
            layers: vec![ArtLayer {
                name: "ground".into(),
                above_people: false,
                opacity: 1.0,
                gids: vec![1],
            }],
            notes: Vec::new(),
        };
        let atlas = build_atlas(&art).expect("nothing to read");
        assert!(atlas.slots.is_empty() && atlas.pages.is_empty());
    }
}
