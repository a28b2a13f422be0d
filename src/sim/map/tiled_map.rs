//! Towns drawn in Tiled for the original Generative Agents: a Tiled map (`.tmj`/`.json` or
//! `.tmx`) whose block layers (`Collisions`, `Sector Blocks`, `Arena Blocks`,
//! `Object Interaction Blocks`, `Spawning Blocks`) hold the ids of the `special_blocks`
//! legends beside it, read into a [`WorldMap`] with the same build and checks as the matrix
//! folder exported from it ([`original`]). The other tile layers are the town's own art,
//! kept as plain data ([`TiledArt`]) for the window to draw; nothing here decodes an image.
//!
//! Readers: `.tmx` (and `.tsx` tilesets) with the `tiled` crate, after a pass of `quick-xml`
//! for what that crate keeps private or does not check (the map's size, before any layer is
//! unpacked; each tileset's `firstgid`; each layer's raw gids, so a short layer is an error
//! rather than a panic); `.tmj`/`.json` with
//! serde structs for Tiled's documented JSON format (no maintained crate reads it). See
//! `docs/design/original-formats.md` §1.6.

use super::WorldMap;
use super::original::{
    self, GID_MASK, ImportReport, Layer, Layers, Origin, legend_path, read_legends, read_world,
};
use crate::data_error::{DataError, SourceLines};
use base64::Engine;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Whether a path names a Tiled map file (`.tmj`, `.json` or `.tmx`).
pub fn is_tiled_file(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| ["tmj", "json", "tmx"].contains(&e.to_ascii_lowercase().as_str()))
}

/// Layers of the convention that carry meaning, not pictures: never drawn.
const BLOCK_LAYERS: [&str; 7] = [
    "Collisions",
    "Sector Blocks",
    "Arena Blocks",
    "Object Interaction Blocks",
    "Spawning Blocks",
    "World Blocks",
    "Special Blocks Registry",
];

/// A Tiled layer name as the convention matches it: spaces at the ends do not count (the
/// original's own map has `"Interior Furniture L2 "`), nor does case.
fn same_name(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

// ------------------------------------------------------------------------------------------
// The art: plain data, drawn by the window (`game::tiled_art`).
// ------------------------------------------------------------------------------------------

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

/// Tiled's flip bits: horizontal, vertical, diagonal (an x/y swap, applied first).
pub const FLIP_H: u32 = 0x8000_0000;
/// See [`FLIP_H`].
pub const FLIP_V: u32 = 0x4000_0000;
/// See [`FLIP_H`].
pub const FLIP_D: u32 = 0x2000_0000;

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

/// Reads only the art of a Tiled map (for a map file of ours that names it in `art:`).
pub fn load_art(path: &Path) -> Result<TiledArt, DataError> {
    let doc = read_doc(path)?;
    art_of(&doc)
}

// ------------------------------------------------------------------------------------------
// The document: what both readers produce.
// ------------------------------------------------------------------------------------------

/// A Tiled map as read, before the convention is applied.
struct Doc {
    path: PathBuf,
    width: i32,
    height: i32,
    tile_width: u32,
    tile_height: u32,
    tilesets: Vec<ArtTileset>,
    layers: Vec<DocLayer>,
    /// Layers and features not read, one line each.
    notes: Vec<String>,
    /// The map's `world` property, if any (a name for the world when no legend gives one).
    world: Option<String>,
}

struct DocLayer {
    name: String,
    visible: bool,
    opacity: f32,
    gids: Vec<u32>,
    /// Line where the layer starts in the file (0 if not found).
    line: usize,
}

impl Doc {
    /// A map of `size` tiles of `tile` pixels, its layers still to read.
    fn new(
        path: &Path,
        size: (i32, i32),
        tile: (u32, u32),
        tilesets: Vec<ArtTileset>,
        world: Option<String>,
    ) -> Self {
        Doc {
            path: path.to_path_buf(),
            width: size.0,
            height: size.1,
            tile_width: tile.0,
            tile_height: tile.1,
            tilesets,
            layers: Vec::new(),
            notes: Vec::new(),
            world,
        }
    }

    /// A tile layer as read (its position in the file is found later); an offset in pixels is
    /// noted, as the layer is drawn on the grid.
    fn push_tile_layer(
        &mut self,
        name: &str,
        (dx, dy): (f64, f64),
        visible: bool,
        opacity: f32,
        gids: Vec<u32>,
    ) {
        if dx != 0.0 || dy != 0.0 {
            self.notes.push(format!(
                "layer '{name}' is offset by ({dx}, {dy}) pixels in Tiled; it is drawn on the grid"
            ));
        }
        self.layers.push(DocLayer {
            name: name.to_string(),
            visible,
            opacity,
            gids,
            line: 0,
        });
    }
}

fn read_doc(path: &Path) -> Result<Doc, DataError> {
    let src = std::fs::read_to_string(path)
        .map_err(|e| DataError::new(path, 0, "", format!("cannot read the file: {e}")))?;
    let src = src.strip_prefix('\u{feff}').unwrap_or(&src).to_string();
    let is_tmx = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("tmx"));
    let mut doc = if is_tmx {
        read_tmx(path, &src)?
    } else {
        read_tmj(path, &src)?
    };
    // Where each layer starts, for errors found later.
    let lines = SourceLines::new(&src);
    let mut from = 0;
    for l in &mut doc.layers {
        let needle = if is_tmx {
            format!("name=\"{}\"", l.name)
        } else {
            serde_json::to_string(&l.name).unwrap_or_default()
        };
        if let Some((line, at)) = lines.find_from(&needle, from) {
            l.line = line;
            from = at + 1;
        }
    }
    let n = (doc.width * doc.height) as usize;
    for l in &doc.layers {
        if l.gids.len() != n {
            return Err(DataError::new(
                path,
                l.line,
                format!("layer '{}'", l.name),
                format!(
                    "has {} cells but the map is {}×{} = {n}",
                    l.gids.len(),
                    doc.width,
                    doc.height
                ),
            ));
        }
    }
    Ok(doc)
}

fn check_map(
    path: &Path,
    orientation: &str,
    infinite: bool,
    w: i64,
    h: i64,
    tw: u32,
    th: u32,
) -> Result<(), DataError> {
    if !orientation.eq_ignore_ascii_case("orthogonal") {
        return Err(DataError::new(
            path,
            0,
            "orientation",
            format!(
                "the map is {orientation}; only orthogonal maps are towns (the original's convention)"
            ),
        ));
    }
    if infinite {
        return Err(DataError::new(
            path,
            0,
            "infinite",
            "an infinite map has no fixed size; in Tiled untick Map > Map Properties > Infinite and save again",
        ));
    }
    for (what, v) in [("width", w), ("height", h)] {
        if !(1..=1024).contains(&v) {
            return Err(DataError::new(
                path,
                0,
                what,
                format!("must be a whole number from 1 to 1024 (found {v})"),
            ));
        }
    }
    if tw == 0 || th == 0 || tw > 1024 || th > 1024 {
        return Err(DataError::new(
            path,
            0,
            "tilewidth",
            format!("tiles of {tw}×{th} pixels cannot be drawn"),
        ));
    }
    Ok(())
}

/// `#rrggbb` or `#aarrggbb` as RGB.
fn parse_colour(s: &str) -> Option<[u8; 3]> {
    let h = s.trim().trim_start_matches('#');
    // `get`, not slicing: the text may hold characters of several bytes.
    let h = if h.len() == 8 { h.get(2..)? } else { h };
    if h.len() != 6 {
        return None;
    }
    let b = |i: usize| u8::from_str_radix(h.get(i..i + 2)?, 16).ok();
    Some([b(0)?, b(2)?, b(4)?])
}

/// Layer data as text (CSV, or base64 with optional zlib/gzip compression) to gids. `cells` is
/// the map's width × height: packed data is unpacked no further than that many tile ids (and
/// one byte more, to know it holds more), so a small file cannot unpack to gigabytes.
fn decode_text(
    text: &str,
    encoding: Option<&str>,
    compression: Option<&str>,
    cells: usize,
) -> Result<Vec<u32>, String> {
    match encoding {
        Some("csv") => text
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .enumerate()
            .map(|(i, c)| {
                c.parse::<u32>()
                    .map_err(|_| format!("cell {i}: {c:?} is not a tile id"))
            })
            .collect(),
        Some("base64") => {
            let cleaned: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            let raw = base64::engine::general_purpose::STANDARD
                .decode(cleaned.as_bytes())
                .map_err(|e| format!("the base64 data cannot be decoded: {e}"))?;
            let limit = cells.saturating_mul(4);
            let unpack = |what: &str, reader: &mut dyn Read| -> Result<Vec<u8>, String> {
                let mut out = Vec::new();
                Read::take(reader, limit as u64 + 1)
                    .read_to_end(&mut out)
                    .map_err(|e| format!("the {what} data cannot be unpacked: {e}"))?;
                if out.len() > limit {
                    return Err(format!(
                        "the {what} data unpacks to more than the {limit} bytes of the map's {cells} cells (4 bytes each); it is damaged or not this map's"
                    ));
                }
                Ok(out)
            };
            let bytes = match compression.unwrap_or("") {
                "" => raw,
                "zlib" => unpack("zlib", &mut flate2::read::ZlibDecoder::new(&raw[..]))?,
                "gzip" => unpack("gzip", &mut flate2::read::GzDecoder::new(&raw[..]))?,
                other => {
                    return Err(format!(
                        "layer data compressed with {other:?} cannot be read (zlib, gzip or none can); in Tiled set Map > Map Properties > Tile Layer Format to CSV and save again"
                    ));
                }
            };
            if bytes.len() % 4 != 0 {
                return Err(format!(
                    "the data is {} bytes, not a whole number of 4-byte tile ids",
                    bytes.len()
                ));
            }
            Ok(bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect())
        }
        other => Err(format!(
            "layer data encoded as {:?} cannot be read (csv or base64 can); in Tiled set Map > Map Properties > Tile Layer Format to CSV and save again",
            other.unwrap_or("XML tiles")
        )),
    }
}

// ------------------------------------------------------------------------------------------
// `.tmj` / `.json`: Tiled's JSON format (https://doc.mapeditor.org/en/stable/reference/json-map-format/).
// ------------------------------------------------------------------------------------------

fn yes() -> bool {
    true
}

fn one() -> f32 {
    1.0
}

#[derive(Deserialize)]
struct JMap {
    #[serde(default)]
    orientation: Option<String>,
    #[serde(default)]
    infinite: bool,
    width: i64,
    height: i64,
    tilewidth: u32,
    tileheight: u32,
    #[serde(default)]
    layers: Vec<JLayer>,
    #[serde(default)]
    tilesets: Vec<JTileset>,
    #[serde(default)]
    properties: Vec<JProperty>,
}

#[derive(Deserialize)]
struct JProperty {
    name: String,
    #[serde(default)]
    value: serde_json::Value,
}

#[derive(Deserialize)]
struct JLayer {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default = "yes")]
    visible: bool,
    #[serde(default = "one")]
    opacity: f32,
    #[serde(default)]
    data: Option<serde_json::Value>,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    compression: Option<String>,
    #[serde(default)]
    chunks: Option<serde_json::Value>,
    #[serde(default)]
    layers: Vec<JLayer>,
    #[serde(default)]
    offsetx: f64,
    #[serde(default)]
    offsety: f64,
}

#[derive(Deserialize)]
struct JTileset {
    #[serde(default)]
    firstgid: u32,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    tilewidth: u32,
    #[serde(default)]
    tileheight: u32,
    #[serde(default)]
    tilecount: u32,
    #[serde(default)]
    columns: u32,
    #[serde(default)]
    margin: u32,
    #[serde(default)]
    spacing: u32,
    #[serde(default)]
    image: Option<String>,
    #[serde(default)]
    imagewidth: u32,
    #[serde(default)]
    imageheight: u32,
    #[serde(default)]
    transparentcolor: Option<String>,
}

fn json_error(path: &Path, e: serde_json::Error) -> DataError {
    DataError::new(path, e.line(), "", format!("not a Tiled map in JSON: {e}"))
}

fn read_tmj(path: &Path, src: &str) -> Result<Doc, DataError> {
    let map: JMap = serde_json::from_str(src).map_err(|e| json_error(path, e))?;
    check_map(
        path,
        map.orientation.as_deref().unwrap_or("orthogonal"),
        map.infinite,
        map.width,
        map.height,
        map.tilewidth,
        map.tileheight,
    )?;
    let dir = absolute_dir(path);
    let mut tilesets = Vec::new();
    for (i, t) in map.tilesets.iter().enumerate() {
        tilesets.push(json_tileset(path, &dir, i, t)?);
    }
    let world = map
        .properties
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case("world"))
        .and_then(|p| p.value.as_str())
        .map(str::to_string);
    let mut doc = Doc::new(
        path,
        (map.width as i32, map.height as i32),
        (map.tilewidth, map.tileheight),
        tilesets,
        world,
    );
    json_layers(path, &map.layers, true, 1.0, &mut doc)?;
    Ok(doc)
}

/// A path made absolute (against the working folder), or as it is when that fails.
pub(super) fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The folder of a file, made absolute (so image paths stay right from any working folder).
fn absolute_dir(path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new("."));
    absolute(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    })
}

fn json_tileset(path: &Path, dir: &Path, i: usize, t: &JTileset) -> Result<ArtTileset, DataError> {
    let field = format!("tilesets[{i}]");
    if t.firstgid == 0 {
        return Err(DataError::new(
            path,
            0,
            field,
            "has no firstgid (the gid of its first tile)",
        ));
    }
    let Some(source) = &t.source else {
        return Ok(art_tileset(dir, t, t.firstgid));
    };
    // An external tileset: `.tsj`/`.json` in the same JSON form, `.tsx` read by the tiled crate.
    let file = dir.join(source);
    let ext = file
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    if ext == "tsx" {
        let ts = ::tiled::Loader::new()
            .load_tsx_tileset(&file)
            .map_err(|e| {
                DataError::new(
                    path,
                    0,
                    field.clone(),
                    format!("the tileset {} cannot be read: {e}", file.display()),
                )
            })?;
        return Ok(tiled_tileset(&ts, t.firstgid));
    }
    let text = std::fs::read_to_string(&file).map_err(|e| {
        DataError::new(
            path,
            0,
            field.clone(),
            format!("the tileset {} cannot be read: {e}", file.display()),
        )
    })?;
    let ext_ts: JTileset = serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(&text))
        .map_err(|e| {
            DataError::new(
                &file,
                e.line(),
                "",
                format!("not a Tiled tileset in JSON: {e}"),
            )
        })?;
    Ok(art_tileset(&absolute_dir(&file), &ext_ts, t.firstgid))
}

fn art_tileset(dir: &Path, t: &JTileset, first_gid: u32) -> ArtTileset {
    ArtTileset {
        name: t.name.clone(),
        first_gid,
        tile_count: t.tilecount,
        columns: t.columns,
        tile_width: t.tilewidth,
        tile_height: t.tileheight,
        margin: t.margin,
        spacing: t.spacing,
        image: t.image.as_ref().map(|i| dir.join(i)),
        image_width: t.imagewidth,
        image_height: t.imageheight,
        transparent: t.transparentcolor.as_deref().and_then(parse_colour),
    }
}

fn json_layers(
    path: &Path,
    layers: &[JLayer],
    visible: bool,
    opacity: f32,
    doc: &mut Doc,
) -> Result<(), DataError> {
    for l in layers {
        let field = || format!("layer '{}'", l.name);
        match l.kind.as_str() {
            "tilelayer" => {
                if l.chunks.is_some() {
                    return Err(DataError::new(
                        path,
                        0,
                        field(),
                        "holds chunks (an infinite map); in Tiled untick Map > Map Properties > Infinite and save again",
                    ));
                }
                let gids = match &l.data {
                    Some(serde_json::Value::Array(cells)) => {
                        let mut out = Vec::with_capacity(cells.len());
                        for (i, c) in cells.iter().enumerate() {
                            let g =
                                c.as_u64()
                                    .filter(|g| *g <= u32::MAX as u64)
                                    .ok_or_else(|| {
                                        DataError::new(
                                            path,
                                            0,
                                            format!("{}, cell {i}", field()),
                                            format!(
                                                "{c} is not a tile id (a whole number, 0 for none)"
                                            ),
                                        )
                                    })?;
                            out.push(g as u32);
                        }
                        out
                    }
                    Some(serde_json::Value::String(text)) => decode_text(
                        text,
                        Some(l.encoding.as_deref().unwrap_or("base64")),
                        l.compression.as_deref(),
                        (doc.width * doc.height) as usize,
                    )
                    .map_err(|m| DataError::new(path, 0, field(), m))?,
                    _ => {
                        return Err(DataError::new(
                            path,
                            0,
                            field(),
                            "has no data (a list of tile ids)",
                        ));
                    }
                };
                doc.push_tile_layer(
                    &l.name,
                    (l.offsetx, l.offsety),
                    visible && l.visible,
                    opacity * l.opacity,
                    gids,
                );
            }
            "group" => json_layers(
                path,
                &l.layers,
                visible && l.visible,
                opacity * l.opacity,
                doc,
            )?,
            other => doc.notes.push(format!(
                "{other} '{}' is not read (only tile layers make the town)",
                l.name
            )),
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------
// `.tmx`: the tiled crate, and quick-xml for the first gids and the raw layer data.
// ------------------------------------------------------------------------------------------

fn tiled_tileset(ts: &::tiled::Tileset, first_gid: u32) -> ArtTileset {
    let img = ts.image.as_ref();
    ArtTileset {
        name: ts.name.clone(),
        first_gid,
        tile_count: ts.tilecount,
        columns: ts.columns,
        tile_width: ts.tile_width,
        tile_height: ts.tile_height,
        margin: ts.margin,
        spacing: ts.spacing,
        image: img.map(|i| absolute(&i.source)),
        image_width: img.map(|i| i.width.max(0) as u32).unwrap_or(0),
        image_height: img.map(|i| i.height.max(0) as u32).unwrap_or(0),
        transparent: img
            .and_then(|i| i.transparent_colour)
            .map(|c| [c.red, c.green, c.blue]),
    }
}

/// What the tiled crate does not give or does not check, read before it runs: the map's size
/// (checked first, as [`check_map`] does), the `firstgid` of each tileset of the map, and the
/// raw gids of each tile layer (in document order, groups included), unpacked no further than
/// the map's size holds.
fn tmx_raw(path: &Path, src: &str) -> Result<(Vec<u32>, Vec<Vec<u32>>), DataError> {
    use quick_xml::events::Event;
    let err = |m: String| DataError::new(path, 0, "", m);
    let xml = |e: quick_xml::Error| err(format!("not a Tiled map in XML: {e}"));
    let mut reader = quick_xml::Reader::from_str(src);
    let mut depth = 0usize;
    // Cells of the map (width × height), once its `<map>` element is read and checked.
    let mut cells: Option<usize> = None;
    let mut first_gids = Vec::new();
    let mut layers: Vec<Vec<u32>> = Vec::new();
    // The `<layer>` being read: its depth and name. Only its own `<data>` holds its gids (an
    // image layer's or a tileset's `<image>` may hold a `<data>` too).
    let mut layer: Option<(usize, String)> = None;
    // The <data> being read: encoding, compression, text.
    let mut data: Option<(Option<String>, Option<String>, String)> = None;
    let attr =
        |e: &quick_xml::events::BytesStart, name: &str| -> Result<Option<String>, DataError> {
            e.try_get_attribute(name)
                .map_err(|e| err(format!("not a Tiled map in XML: {e}")))?
                .map(|a| {
                    a.unescape_value()
                        .map(|v| v.into_owned())
                        .map_err(|e| err(format!("not a Tiled map in XML: {e}")))
                })
                .transpose()
        };
    // A whole-number attribute of `<map>`.
    let number = |e: &quick_xml::events::BytesStart, name: &str| -> Result<i64, DataError> {
        let v = attr(e, name)?
            .ok_or_else(|| DataError::new(path, 0, name, "is missing from the <map> element"))?;
        v.trim()
            .parse::<i64>()
            .map_err(|_| DataError::new(path, 0, name, format!("{v:?} is not a whole number")))
    };
    loop {
        let ev = reader.read_event().map_err(xml)?;
        match ev {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(ev, Event::Empty(_));
                match e.name().as_ref() {
                    b"map" if depth == 0 => {
                        let orientation = attr(e, "orientation")?;
                        let infinite = attr(e, "infinite")?.is_some_and(|v| v.trim() == "1");
                        let (w, h) = (number(e, "width")?, number(e, "height")?);
                        let tile = |v: i64| v.clamp(0, u32::MAX.into()) as u32;
                        let (tw, th) = (number(e, "tilewidth")?, number(e, "tileheight")?);
                        check_map(
                            path,
                            orientation.as_deref().unwrap_or("orthogonal"),
                            infinite,
                            w,
                            h,
                            tile(tw),
                            tile(th),
                        )?;
                        cells = Some((w * h) as usize);
                    }
                    b"tileset" if depth == 1 => {
                        let v = attr(e, "firstgid")?.unwrap_or_default();
                        first_gids.push(v.trim().parse::<u32>().map_err(|_| {
                            err(format!("a tileset's firstgid {v:?} is not a whole number"))
                        })?);
                    }
                    b"layer" => {
                        layers.push(Vec::new());
                        if !empty {
                            layer = Some((depth, attr(e, "name")?.unwrap_or_default()));
                        }
                    }
                    b"data" if !empty && layer.as_ref().is_some_and(|(d, _)| depth == d + 1) => {
                        data = Some((attr(e, "encoding")?, attr(e, "compression")?, String::new()));
                    }
                    _ => {}
                }
                if !empty {
                    depth += 1;
                }
            }
            Event::Text(t) => {
                if let Some((_, _, text)) = &mut data {
                    text.push_str(&t.unescape().map_err(xml)?);
                }
            }
            Event::CData(t) => {
                if let Some((_, _, text)) = &mut data {
                    text.push_str(&String::from_utf8_lossy(&t.into_inner()));
                }
            }
            Event::End(e) => {
                depth = depth.saturating_sub(1);
                if e.name().as_ref() == b"data"
                    && let Some((enc, comp, text)) = data.take()
                {
                    let name = layer.as_ref().map(|(_, n)| n.as_str()).unwrap_or_default();
                    let field = format!("layer '{name}'");
                    let Some(cells) = cells else {
                        return Err(DataError::new(
                            path,
                            0,
                            field,
                            "comes before the <map> element's size",
                        ));
                    };
                    let gids = decode_text(&text, enc.as_deref(), comp.as_deref(), cells)
                        .map_err(|m| DataError::new(path, 0, field, m))?;
                    if let Some(l) = layers.last_mut() {
                        *l = gids;
                    }
                }
                if layer.as_ref().is_some_and(|(d, _)| *d == depth) {
                    layer = None;
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if cells.is_none() {
        return Err(err("not a Tiled map: no <map> element".into()));
    }
    Ok((first_gids, layers))
}

fn read_tmx(path: &Path, src: &str) -> Result<Doc, DataError> {
    // First our own pass: the tiled crate unpacks every layer before anyone sees the map's
    // size, so a huge size or an unpacking bomb is refused here, before it runs.
    let (first_gids, raw) = tmx_raw(path, src)?;
    let map = ::tiled::Loader::new()
        .load_tmx_map(path)
        .map_err(|e| DataError::new(path, 0, "", format!("not a Tiled map: {e}")))?;
    let orientation = match map.orientation {
        ::tiled::Orientation::Orthogonal => "orthogonal",
        ::tiled::Orientation::Isometric => "isometric",
        ::tiled::Orientation::Staggered => "staggered",
        ::tiled::Orientation::Hexagonal => "hexagonal",
        ::tiled::Orientation::Oblique => "oblique",
    };
    check_map(
        path,
        orientation,
        map.infinite(),
        map.width as i64,
        map.height as i64,
        map.tile_width,
        map.tile_height,
    )?;
    if first_gids.len() != map.tilesets().len() {
        return Err(DataError::new(
            path,
            0,
            "tileset",
            format!(
                "{} tilesets read but {} firstgid attributes found",
                map.tilesets().len(),
                first_gids.len()
            ),
        ));
    }
    let tilesets = map
        .tilesets()
        .iter()
        .zip(&first_gids)
        .map(|(ts, g)| tiled_tileset(ts, *g))
        .collect();
    let world = map.properties.iter().find_map(|(k, v)| match v {
        ::tiled::PropertyValue::StringValue(s) if k.eq_ignore_ascii_case("world") => {
            Some(s.clone())
        }
        _ => None,
    });
    let mut doc = Doc::new(
        path,
        (map.width as i32, map.height as i32),
        (map.tile_width, map.tile_height),
        tilesets,
        world,
    );
    let mut raw = raw.into_iter();
    fn walk<'m>(
        layers: impl Iterator<Item = ::tiled::Layer<'m>>,
        visible: bool,
        opacity: f32,
        raw: &mut std::vec::IntoIter<Vec<u32>>,
        doc: &mut Doc,
    ) {
        for l in layers {
            match l.layer_type() {
                ::tiled::LayerType::Tiles(_) => {
                    doc.push_tile_layer(
                        &l.name,
                        (l.offset_x as f64, l.offset_y as f64),
                        visible && l.visible,
                        opacity * l.opacity,
                        raw.next().unwrap_or_default(),
                    );
                }
                ::tiled::LayerType::Group(g) => walk(
                    g.layers(),
                    visible && l.visible,
                    opacity * l.opacity,
                    raw,
                    doc,
                ),
                ::tiled::LayerType::Objects(_) => doc.notes.push(format!(
                    "object layer '{}' is not read (only tile layers make the town)",
                    l.name
                )),
                ::tiled::LayerType::Image(_) => doc.notes.push(format!(
                    "image layer '{}' is not read (only tile layers make the town)",
                    l.name
                )),
            }
        }
    }
    walk(map.layers(), true, 1.0, &mut raw, &mut doc);
    Ok(doc)
}

// ------------------------------------------------------------------------------------------
// The convention: block layers and legends into a town; the rest is art.
// ------------------------------------------------------------------------------------------

/// Where the `special_blocks/` legends of a Tiled map are: beside it, in `matrix/` beside it,
/// in its parent folder, or in `../matrix/` (the original's `assets/<town>/visuals/` map with
/// `assets/<town>/matrix/special_blocks/`). Returns the folder holding `special_blocks/`.
pub fn legends_dir(map: &Path) -> Result<PathBuf, DataError> {
    let dir = absolute_dir(map);
    let mut tried = Vec::new();
    let mut candidates = vec![dir.clone(), dir.join("matrix")];
    if let Some(parent) = dir.parent() {
        candidates.push(parent.to_path_buf());
        candidates.push(parent.join("matrix"));
    }
    for c in candidates {
        let sb = c.join("special_blocks");
        if sb.is_dir() {
            return Ok(c);
        }
        tried.push(sb.display().to_string());
    }
    Err(DataError::new(
        map,
        0,
        "",
        format!(
            "no special_blocks/ folder with the legends (sector_blocks.csv, arena_blocks.csv, game_object_blocks.csv, spawning_location_blocks.csv) beside the map; looked in {}",
            tried.join(", ")
        ),
    ))
}

/// Reads a Tiled map that follows the original's layer convention into a town, with its art.
pub fn load_tiled(path: &Path) -> Result<(WorldMap, ImportReport), DataError> {
    let doc = read_doc(path)?;
    let mut report = ImportReport::default();

    // The block layers, by name.
    let find = |name: &str| -> Result<Option<usize>, DataError> {
        let hits: Vec<usize> = doc
            .layers
            .iter()
            .enumerate()
            .filter(|(_, l)| same_name(&l.name, name))
            .map(|(i, _)| i)
            .collect();
        if hits.len() > 1 {
            return Err(DataError::new(
                path,
                doc.layers[hits[1]].line,
                format!("layer '{}'", doc.layers[hits[1]].name),
                format!(
                    "there are {} layers named '{name}'; the town needs exactly one",
                    hits.len()
                ),
            ));
        }
        Ok(hits.first().copied())
    };
    let mut index = [0usize; 5];
    let mut has_spawns = true;
    for l in Layer::ALL {
        match find(l.tiled_name())? {
            Some(i) => index[l as usize] = i,
            None if l == Layer::Spawn => has_spawns = false,
            None => {
                return Err(DataError::new(
                    path,
                    0,
                    format!("layer '{}'", l.tiled_name()),
                    format!(
                        "the map has no '{}' tile layer; a town drawn for the original has Collisions, Sector Blocks, Arena Blocks, Object Interaction Blocks and Spawning Blocks (this map's tile layers: {})",
                        l.tiled_name(),
                        doc.layers
                            .iter()
                            .map(|l| format!("'{}'", l.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
    }
    let n = (doc.width * doc.height) as usize;
    let cells = Layer::ALL.map(|l| {
        if l == Layer::Spawn && !has_spawns {
            vec![0; n]
        } else {
            doc.layers[index[l as usize]]
                .gids
                .iter()
                .map(|g| g & GID_MASK)
                .collect()
        }
    });
    if !has_spawns {
        report
            .notes
            .push("no 'Spawning Blocks' layer: the town has no spawn points".into());
    }

    let dir = legends_dir(path)?;
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("the world")
        .to_string();
    let (fallback, why) = match &doc.world {
        Some(w) => (w.clone(), "from the map's `world` property"),
        None => (stem, "after the map file"),
    };
    let world = read_world(&dir, &fallback, why, &mut report)?;
    let spawn_legend_there = legend_path(&dir, "spawning_location").is_file();
    if has_spawns && !spawn_legend_there && cells[Layer::Spawn as usize].iter().all(|c| *c == 0) {
        has_spawns = false; // an empty layer and no legend: nothing to read
    }
    let [sector_legend, arena_legend, object_legend, spawn_legend] =
        read_legends(&dir, has_spawns)?;
    report.read.push(format!(
        "legends from {}",
        dir.join("special_blocks").display()
    ));

    let mut lines = [0usize; 5];
    for l in Layer::ALL {
        if l != Layer::Spawn || has_spawns {
            lines[l as usize] = doc.layers[index[l as usize]].line;
        }
    }
    let layers = Layers {
        dir,
        origin: Origin::Tiled {
            file: path.to_path_buf(),
            lines,
        },
        world,
        width: doc.width,
        height: doc.height,
        cells,
        sector_legend,
        arena_legend,
        object_legend,
        spawn_legend,
        terrain: None,
        objects_block: false,
    };
    let (mut map, mut report) = original::build_town(layers, report)?;

    let art = art_of(&doc)?;
    let missing = art.missing_images();
    report.read.push(format!(
        "art: {} layer(s) drawn ({} above people), {} tileset(s) used{}",
        art.layers.len(),
        art.layers.iter().filter(|l| l.above_people).count(),
        art.used_tilesets().len(),
        if missing.is_empty() {
            String::new()
        } else {
            format!(
                "; {} image(s) missing, so the window draws our own art: {}",
                missing.len(),
                missing
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    ));
    report.notes.extend(doc.notes.iter().cloned());
    report.notes.extend(art.notes.iter().cloned());
    map.art = Some(Arc::new(art));
    Ok((map, report))
}

/// The art of a map: every visible tile layer that is not a block layer, bottom first, with
/// each gid checked against the tilesets.
fn art_of(doc: &Doc) -> Result<TiledArt, DataError> {
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
    use super::*;

    #[test]
    fn colours_and_layer_data_decode() {
        assert_eq!(parse_colour("#ff00ff"), Some([255, 0, 255]));
        assert_eq!(parse_colour("ff00ff"), Some([255, 0, 255]));
        assert_eq!(parse_colour("#80ff00ff"), Some([255, 0, 255]));
        assert_eq!(parse_colour("#f0f"), None);
        // Eight bytes whose third is inside a character: no panic, no colour.
        assert_eq!(parse_colour("#aébcdef"), None);
        assert_eq!(parse_colour("ééé"), None);
        assert_eq!(
            decode_text("1, 2,\n3", Some("csv"), None, 3).unwrap(),
            vec![1, 2, 3]
        );
        // 1 and 2 as little-endian u32s, base64 ("AQAAAAIAAAA="), then zlib-packed.
        assert_eq!(
            decode_text("AQAAAAIAAAA=", Some("base64"), None, 2).unwrap(),
            vec![1, 2]
        );
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut z, &[1, 0, 0, 0, 2, 0, 0, 0]).unwrap();
        let packed = base64::engine::general_purpose::STANDARD.encode(z.finish().unwrap());
        assert_eq!(
            decode_text(&packed, Some("base64"), Some("zlib"), 2).unwrap(),
            vec![1, 2]
        );
        let e = decode_text(&packed, Some("base64"), Some("zstd"), 2).unwrap_err();
        assert!(e.contains("zstd") && e.contains("CSV"), "{e}");
        let e = decode_text("AQAAAAI=", Some("base64"), None, 2).unwrap_err();
        assert!(e.contains("5 bytes"), "{e}");
    }

    /// `bytes` zero bytes, packed with zlib and gzip, as base64.
    fn bombs(bytes: usize) -> [(String, &'static str); 2] {
        let zeros = vec![0u8; bytes];
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut z, &zeros).unwrap();
        let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut g, &zeros).unwrap();
        let b64 = |v: Vec<u8>| base64::engine::general_purpose::STANDARD.encode(v);
        [
            (b64(z.finish().unwrap()), "zlib"),
            (b64(g.finish().unwrap()), "gzip"),
        ]
    }

    #[test]
    fn packed_layer_data_unpacks_no_further_than_the_map_holds() {
        // 64 MiB of zeros packs into some 64 kB; a 2×2 map holds 16 bytes of tile ids.
        for (packed, how) in bombs(64 << 20) {
            assert!(packed.len() < 200_000, "{}", packed.len());
            let e = decode_text(&packed, Some("base64"), Some(how), 4).unwrap_err();
            assert!(
                e.contains(how) && e.contains("more than the 16 bytes") && e.contains("4 cells"),
                "{e}"
            );
        }
        // Exactly the map's size unpacks.
        for (packed, how) in bombs(16) {
            assert_eq!(
                decode_text(&packed, Some("base64"), Some(how), 4).unwrap(),
                vec![0; 4]
            );
        }
    }

    /// A one-layer `.tmx` of `w`×`h` tiles whose layer holds `data` (a whole `<data>` element),
    /// with `more` after the layer.
    fn tmx_text(w: &str, h: &str, data: &str, more: &str) -> String {
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<map version="1.8" orientation="orthogonal" width="{w}" height="{h}" tilewidth="32" tileheight="32" infinite="0">
 <tileset firstgid="1" name="t" tilewidth="32" tileheight="32" tilecount="4" columns="2">
  <image source="t.png" width="64" height="64"/>
 </tileset>
 <layer id="1" name="Ground" width="{w}" height="{h}">
  {data}
 </layer>
 {more}
</map>"#
        )
    }

    #[test]
    fn a_tmx_map_is_checked_before_its_layers_are_unpacked() {
        let path = Path::new("town.tmx");
        let csv = r#"<data encoding="csv">1,2,3,4</data>"#;
        let (gids, layers) = tmx_raw(path, &tmx_text("2", "2", csv, "")).unwrap();
        assert_eq!((gids, layers), (vec![1], vec![vec![1, 2, 3, 4]]));
        // A size past the limit, or none, is refused before any layer is read.
        let e = tmx_raw(path, &tmx_text("100000", "2", csv, "")).unwrap_err();
        assert_eq!((e.field.as_str(), e.file.as_path()), ("width", path), "{e}");
        assert!(e.message.contains("100000"), "{e}");
        let e = tmx_raw(path, &tmx_text("2", "two", csv, "")).unwrap_err();
        assert_eq!(e.field, "height", "{e}");
        let e = tmx_raw(
            path,
            &tmx_text("2", "2", csv, "").replace("infinite=\"0\"", "infinite=\"1\""),
        )
        .unwrap_err();
        assert_eq!(e.field, "infinite", "{e}");
        // A packed layer that unpacks past the map's size names the file and the layer.
        for (packed, how) in bombs(64 << 20) {
            let data = format!(r#"<data encoding="base64" compression="{how}">{packed}</data>"#);
            let e = tmx_raw(path, &tmx_text("2", "2", &data, "")).unwrap_err();
            assert_eq!(
                (e.field.as_str(), e.file.as_path()),
                ("layer 'Ground'", path),
                "{e}"
            );
            assert!(e.message.contains("more than the 16 bytes"), "{e}");
        }
        // read_doc refuses the file before the tiled crate unpacks it.
        let dir = std::env::temp_dir().join(format!("simulacra-tmx-bomb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("town.tmx");
        let [(packed, _), _] = bombs(64 << 20);
        let data = format!(r#"<data encoding="base64" compression="zlib">{packed}</data>"#);
        std::fs::write(&file, tmx_text("2", "2", &data, "")).unwrap();
        let e = read_doc(&file).err().expect("refused");
        assert_eq!(
            (e.field.as_str(), e.file.as_path()),
            ("layer 'Ground'", file.as_path()),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn only_a_tile_layer_s_own_data_holds_its_gids() {
        // An image layer after the tile layer with an embedded image (`<data>` in `<image>`).
        let path = Path::new("town.tmx");
        let csv = r#"<data encoding="csv">1,2,3,4</data>"#;
        let more = r#"<imagelayer id="2" name="Sky"><image format="png"><data encoding="base64">AAAAAAAA</data></image></imagelayer>"#;
        let (_, layers) = tmx_raw(path, &tmx_text("2", "2", csv, more)).unwrap();
        assert_eq!(layers, vec![vec![1, 2, 3, 4]]);
        // Nor does a tileset's embedded image before any layer count.
        let text = tmx_text("2", "2", csv, "").replace(
            r#"<image source="t.png" width="64" height="64"/>"#,
            r#"<image format="png" width="64" height="64"><data encoding="base64">AAAA</data></image>"#,
        );
        let (_, layers) = tmx_raw(path, &text).unwrap();
        assert_eq!(layers, vec![vec![1, 2, 3, 4]]);
    }

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
