//! The one stable hash of the crate: FNV-1a, the same on every machine and run (Rust's own
//! hasher is seeded per process). Used for per-person variety (routines, goal tiles), scripted
//! answers and embeddings, and the checksum of a save's vectors.

/// FNV-1a, 64 bits, of bytes.
pub fn fnv1a_64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// FNV-1a, 32 bits, of bytes.
pub fn fnv1a_32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(2_166_136_261u32, |h, b| {
        (h ^ *b as u32).wrapping_mul(16_777_619)
    })
}

/// SplitMix64's finaliser: 64 well-mixed bits from any 64 (the step of the towns' random
/// source, and the score of a resident for an endpoint of a pool).
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A stable 64-bit hash of text ([`fnv1a_64`] of its UTF-8 bytes).
pub fn text_hash(s: &str) -> u64 {
    fnv1a_64(s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // The published FNV-1a test vectors.
        assert_eq!(fnv1a_64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a_64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a_32(b"a"), 0xe40c_292c);
        assert_eq!(text_hash("foobar"), 0x8594_4171_f739_67e8);
    }
}
