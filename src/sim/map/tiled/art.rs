//! A Tiled map's own art as plain data ([`TiledArt`]: tilesets and the art layers, with gids),
//! drawn by the window (`game::tiled_art`); and how it is taken from a map as read.

use super::doc::Doc;
use super::{BLOCK_LAYERS, absolute, same_name};
use crate::data_error::DataError;
use crate::sim::map::layers::GID_MASK;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A Tiled map's own art: its tilesets and the tile layers that are not block layers, in
/// drawing order. Plain data (paths and gids), so a headless run carries it for free and a
/// save can keep it; the window decodes the images.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TiledArt {
    /// The Tiled file (an absolute path).
    pub source: PathBuf,
    /// Width in tiles.
    pub width: i32,
    /// Height in tiles.
    pub height: i32,
    /// Pixels per tile, across.
    pub tile_width: u32,
    /// Pixels per tile, down.
    pub tile_height: u32,
    /// The tilesets, by first gid.
    pub tilesets: Vec<ArtTileset>,
    /// The art layers, bottom first.
    pub layers: Vec<ArtLayer>,
    /// What of the art cannot be drawn, one line each (told once when the town is drawn).
    pub notes: Vec<String>,
}

/// One tileset: a single image cut into tiles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtTileset {
    /// Its name in Tiled.
    pub name: String,
    /// The gid of its first tile.
    pub first_gid: u32,
    /// Tiles it holds.
    pub tile_count: u32,
    /// Tiles per row of the image.
    pub columns: u32,
    /// Tile width in pixels.
    pub tile_width: u32,
    /// Tile height in pixels.
    pub tile_height: u32,
    /// Pixels around the tiles.
    pub margin: u32,
    /// Pixels between tiles.
    pub spacing: u32,
    /// The image file (absolute); `None` for a collection of single images (not drawn).
    pub image: Option<PathBuf>,
    /// The image's width in pixels, as the map says.
    pub image_width: u32,
    /// The image's height in pixels, as the map says.
    pub image_height: u32,
    /// The colour drawn as transparent (Tiled's `transparentcolor`), as RGB.
    pub transparent: Option<[u8; 3]>,
}

impl ArtTileset {
    /// The top-left pixel of a tile (by its id within the tileset) in an image of `iw`×`ih`
    /// pixels, if the whole tile lies inside it. The geometry comes from the file, so the
    /// arithmetic is checked: a tile past any limit is outside.
    pub fn tile_origin(&self, local: u32, iw: u32, ih: u32) -> Option<(u32, u32)> {
        let c = u64::from(self.columns.max(1));
        let (col, row) = (u64::from(local) % c, u64::from(local) / c);
        let at = |i: u64, tile: u32, image: u32| -> Option<u32> {
            let step = u64::from(tile) + u64::from(self.spacing);
            let o = u64::from(self.margin).checked_add(i.checked_mul(step)?)?;
            // o + tile ≤ image ≤ u32::MAX, so o fits.
            (o + u64::from(tile) <= u64::from(image)).then_some(o as u32)
        };
        Some((
            at(col, self.tile_width, iw)?,
            at(row, self.tile_height, ih)?,
        ))
    }
}

/// One art layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtLayer {
    /// Its name in Tiled.
    pub name: String,
    /// Drawn above people (the original draws layers named `Foreground…` above its sprites).
    pub above_people: bool,
    /// Tiled's layer opacity, 0 to 1.
    pub opacity: f32,
    /// Gids, row-major from the top-left, with Tiled's flip bits; 0 where empty.
    pub gids: Vec<u32>,
}

/// The largest tile side drawn, in pixels: the window copies the tiles into pages of 16 × 16
/// tiles, which then stay within 4,096 pixels a side (a texture every adapter takes).
pub const MAX_DRAWN_TILE: u32 = 256;

impl TiledArt {
    /// The tileset (index) and id within it of a gid (flip bits ignored), if a tileset holds it.
    pub fn tileset_of(&self, gid: u32) -> Option<(usize, u32)> {
        let g = gid & GID_MASK;
        if g == 0 {
            return None;
        }
        let (i, ts) = self
            .tilesets
            .iter()
            .enumerate()
            .filter(|(_, t)| t.first_gid <= g)
            .max_by_key(|(_, t)| t.first_gid)?;
        let local = g - ts.first_gid;
        (local < ts.tile_count).then_some((i, local))
    }

    /// Indices of the tilesets the layers use.
    pub fn used_tilesets(&self) -> Vec<usize> {
        let mut used = vec![false; self.tilesets.len()];
        for l in &self.layers {
            for g in &l.gids {
                if let Some((i, _)) = self.tileset_of(*g) {
                    used[i] = true;
                }
            }
        }
        (0..used.len()).filter(|i| used[*i]).collect()
    }

    /// Whether a tileset's tiles can be drawn on this map's grid (see [`TiledArt::not_drawn`]).
    pub fn drawable(&self, ts: &ArtTileset) -> bool {
        self.not_drawn(ts).is_none()
    }

    /// Why a tileset's tiles cannot be drawn, if they cannot: they must come from one image, at
    /// the map's tile size, no larger than [`MAX_DRAWN_TILE`], and its margin and spacing must
    /// leave room for them in the image (as the map gives its size).
    pub fn not_drawn(&self, ts: &ArtTileset) -> Option<String> {
        if ts.image.is_none() {
            return Some("is a collection of single images; its tiles are not drawn".into());
        }
        if (ts.tile_width, ts.tile_height) != (self.tile_width, self.tile_height) {
            return Some(format!(
                "has {}×{} tiles on a map of {}×{}; its tiles are not drawn",
                ts.tile_width, ts.tile_height, self.tile_width, self.tile_height
            ));
        }
        if ts.tile_width > MAX_DRAWN_TILE || ts.tile_height > MAX_DRAWN_TILE {
            return Some(format!(
                "has tiles of {}×{} pixels; tiles over {MAX_DRAWN_TILE} pixels a side are not drawn",
                ts.tile_width, ts.tile_height
            ));
        }
        let (iw, ih) = (u64::from(ts.image_width), u64::from(ts.image_height));
        if iw > 0 && ih > 0 {
            let (tw, th) = (u64::from(ts.tile_width), u64::from(ts.tile_height));
            let (m, sp) = (u64::from(ts.margin), u64::from(ts.spacing));
            if m + tw > iw || m + th > ih {
                return Some(format!(
                    "has a margin of {m} pixels, which leaves no room for a {tw}×{th} tile in its {iw}×{ih} image; its tiles are not drawn"
                ));
            }
            let columns = u64::from(ts.columns.max(1));
            let rows = u64::from(ts.tile_count).div_ceil(columns);
            if (columns > 1 && m + 2 * tw + sp > iw) || (rows > 1 && m + 2 * th + sp > ih) {
                return Some(format!(
                    "has a spacing of {sp} pixels, which leaves no room for a second tile in its {iw}×{ih} image; its tiles are not drawn"
                ));
            }
        }
        None
    }

    /// The image files the layers need that are not there (the window then draws our own art).
    pub fn missing_images(&self) -> Vec<PathBuf> {
        self.used_tilesets()
            .into_iter()
            .filter_map(|i| self.tilesets[i].image.clone())
            .filter(|p| !p.is_file())
            .collect()
    }
}

/// The art of a map: every visible tile layer that is not a block layer, bottom first, with
/// each gid checked against the tilesets.
pub(super) fn art_of(doc: &Doc) -> Result<TiledArt, DataError> {
    let source = absolute(&doc.path);
    let mut art = TiledArt {
        source,
        width: doc.width,
        height: doc.height,
        tile_width: doc.tile_width,
        tile_height: doc.tile_height,
        tilesets: doc.tilesets.clone(),
        layers: Vec::new(),
        notes: Vec::new(),
    };
    art.tilesets.sort_by_key(|t| t.first_gid);
    let w = doc.width;
    for l in &doc.layers {
        if BLOCK_LAYERS.iter().any(|b| same_name(b, &l.name)) || !l.visible {
            continue;
        }
        let mut any = false;
        let mut only_blocks = true;
        for (i, g) in l.gids.iter().enumerate() {
            if *g & GID_MASK == 0 {
                continue;
            }
            any = true;
            let Some((t, _)) = art.tileset_of(*g) else {
                let (x, y) = (i as i32 % w, i as i32 / w);
                return Err(DataError::new(
                    &doc.path,
                    l.line,
                    format!("layer '{}', cell {i} (x {x}, y {y})", l.name),
                    format!(
                        "gid {} is in no tileset of the map (tilesets hold {})",
                        g & GID_MASK,
                        art.tilesets
                            .iter()
                            .map(|t| format!(
                                "{}–{}",
                                t.first_gid,
                                t.first_gid.saturating_add(t.tile_count.max(1) - 1)
                            ))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            };
            only_blocks &= art.tilesets[t]
                .name
                .to_ascii_lowercase()
                .starts_with("blocks");
        }
        if !any {
            continue;
        }
        if only_blocks {
            art.notes.push(format!(
                "layer '{}' holds only block tiles and is not drawn",
                l.name
            ));
            continue;
        }
        art.layers.push(ArtLayer {
            name: l.name.clone(),
            above_people: l.name.trim().to_ascii_lowercase().starts_with("foreground"),
            opacity: l.opacity.clamp(0.0, 1.0),
            gids: l.gids.clone(),
        });
    }
    for i in art.used_tilesets() {
        let ts = &art.tilesets[i];
        if let Some(why) = art.not_drawn(ts) {
            art.notes.push(format!("tileset '{}' {why}", ts.name));
        }
    }
    Ok(art)
}

#[cfg(test)]
mod tests {
    use super::super::{FLIP_D, FLIP_H};
    use super::*;

    fn tileset(columns: u32, margin: u32, spacing: u32, image: (u32, u32)) -> ArtTileset {
        ArtTileset {
            name: "t".into(),
            first_gid: 1,
            tile_count: 16,
            columns,
            tile_width: 32,
            tile_height: 32,
            margin,
            spacing,
            image: Some(PathBuf::from("/nonexistent/t.png")),
            image_width: image.0,
            image_height: image.1,
            transparent: None,
        }
    }

    #[test]
    fn tile_geometry_from_the_file_cannot_overflow() {
        let ts = tileset(4, 1, 2, (136, 136));
        assert_eq!(ts.tile_origin(0, 136, 136), Some((1, 1)));
        assert_eq!(ts.tile_origin(5, 136, 136), Some((35, 35)));
        assert_eq!(ts.tile_origin(15, 136, 136), Some((103, 103)));
        // Past the image (the map claims more tiles than the picture has): outside.
        assert_eq!(ts.tile_origin(16, 136, 136), None);
        assert_eq!(ts.tile_origin(15, 134, 136), None);
        // Values that overflow u32 (and u64) arithmetic: outside, not a panic or a wrap.
        let huge = tileset(u32::MAX, u32::MAX - 5, u32::MAX, (0, 0));
        assert_eq!(huge.tile_origin(u32::MAX - 1, u32::MAX, u32::MAX), None);
        let wide = tileset(1, 0, u32::MAX, (0, 0));
        assert_eq!(wide.tile_origin(u32::MAX, u32::MAX, u32::MAX), None);
        assert_eq!(wide.tile_origin(0, u32::MAX, u32::MAX), Some((0, 0)));
    }

    #[test]
    fn tilesets_that_cannot_be_drawn_say_why() {
        let art = |ts: ArtTileset, tile: u32| TiledArt {
            source: PathBuf::from("/x.tmj"),
            width: 1,
            height: 1,
            tile_width: tile,
            tile_height: tile,
            tilesets: vec![ts],
            layers: Vec::new(),
            notes: Vec::new(),
        };
        let why = |ts: ArtTileset| {
            let a = art(ts, 32);
            a.not_drawn(&a.tilesets[0])
        };
        assert_eq!(why(tileset(4, 0, 0, (128, 128))), None);
        assert_eq!(why(tileset(4, 1, 2, (136, 136))), None);
        // The image's size unknown (0): only the tiles' own checks apply when drawn.
        assert_eq!(why(tileset(4, 5000, 0, (0, 0))), None);
        let m = why(tileset(4, u32::MAX, 0, (128, 128))).unwrap();
        assert!(m.contains("margin of 4294967295"), "{m}");
        let m = why(tileset(4, 0, u32::MAX, (128, 128))).unwrap();
        assert!(m.contains("spacing of 4294967295"), "{m}");
        // One column and one row: the spacing never matters.
        let mut one = tileset(1, 0, 500, (32, 32));
        one.tile_count = 1;
        assert_eq!(why(one), None);
        // Tiles too large for a page within 4,096 pixels.
        let mut big = tileset(2, 0, 0, (1024, 1024));
        (big.tile_width, big.tile_height) = (512, 512);
        let a = art(big, 512);
        let m = a.not_drawn(&a.tilesets[0]).unwrap();
        assert!(m.contains("512×512") && m.contains("256"), "{m}");
        let mut edge = tileset(2, 0, 0, (512, 512));
        (edge.tile_width, edge.tile_height) = (256, 256);
        let a = art(edge, 256);
        assert_eq!(a.not_drawn(&a.tilesets[0]), None);
    }

    #[test]
    fn gids_find_their_tileset_and_flip_bits_are_ignored() {
        let ts = |name: &str, first_gid, tile_count| ArtTileset {
            name: name.into(),
            first_gid,
            tile_count,
            columns: 4,
            tile_width: 32,
            tile_height: 32,
            margin: 0,
            spacing: 0,
            image: Some(PathBuf::from("/nonexistent/x.png")),
            image_width: 128,
            image_height: 128,
            transparent: None,
        };
        let art = TiledArt {
            source: PathBuf::from("/x.tmj"),
            width: 2,
            height: 1,
            tile_width: 32,
            tile_height: 32,
            tilesets: vec![ts("a", 1, 16), ts("b", 100, 4)],
            layers: vec![ArtLayer {
                name: "g".into(),
                above_people: false,
                opacity: 1.0,
                gids: vec![FLIP_H | 101, 0],
            }],
            notes: Vec::new(),
        };
        assert_eq!(art.tileset_of(5), Some((0, 4)));
        assert_eq!(art.tileset_of(FLIP_H | FLIP_D | 101), Some((1, 1)));
        assert_eq!(art.tileset_of(20), None, "past the first tileset's tiles");
        assert_eq!(art.tileset_of(0), None);
        assert_eq!(art.used_tilesets(), vec![1]);
        assert_eq!(art.missing_images().len(), 1);
        assert_eq!(ts("c", 1, 16).tile_origin(5, 128, 128), Some((32, 32)));
    }
}
