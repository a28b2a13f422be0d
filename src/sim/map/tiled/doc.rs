//! The document both Tiled readers produce ([`Doc`]): the map's size, tilesets and tile
//! layers as read, before the convention is applied; with the checks and decoding the two
//! readers share (the map's size and shape, layer data as text, colours).

use super::ArtTileset;
use crate::data_error::DataError;
use base64::Engine;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A Tiled map as read, before the convention is applied.
pub(super) struct Doc {
    pub(super) path: PathBuf,
    pub(super) width: i32,
    pub(super) height: i32,
    pub(super) tile_width: u32,
    pub(super) tile_height: u32,
    pub(super) tilesets: Vec<ArtTileset>,
    pub(super) layers: Vec<DocLayer>,
    /// Layers and features not read, one line each.
    pub(super) notes: Vec<String>,
    /// The map's `world` property, if any (a name for the world when no legend gives one).
    pub(super) world: Option<String>,
}

/// One tile layer as read.
pub(super) struct DocLayer {
    pub(super) name: String,
    pub(super) visible: bool,
    pub(super) opacity: f32,
    pub(super) gids: Vec<u32>,
    /// Line where the layer starts in the file (0 if not found).
    pub(super) line: usize,
}

impl Doc {
    /// A map of `size` tiles of `tile` pixels, its layers still to read.
    pub(super) fn new(
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
    pub(super) fn push_tile_layer(
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

/// The checks of a map's header both readers make: orthogonal, not infinite, 1 to 1024 tiles a
/// side, tiles of 1 to 1024 pixels.
pub(super) fn check_map(
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
pub(super) fn parse_colour(s: &str) -> Option<[u8; 3]> {
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
pub(super) fn decode_text(
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

#[cfg(test)]
pub(super) mod tests {
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
    pub(in super::super) fn bombs(bytes: usize) -> [(String, &'static str); 2] {
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
}
