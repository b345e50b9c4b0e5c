//! Deterministic random streams: one per component, derived from the run's seed.
//!
//! `docs/design.md#conventions` ("Determinism"): `StdRng` is not reproducible across `rand`
//! releases, and `RandomState` differs per process, so every random decision here comes from a
//! named algorithm (xoshiro256++) seeded from the run seed and the component's name.

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// FNV-1a (64-bit) of a string: a stable, dependency-free hash for component names.
pub fn fnv1a64(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// One step of splitmix64: a bijective mixer that spreads nearby seeds far apart.
pub fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The random stream of `component` (e.g. `"gowalla/users"`) in the run seeded with `seed`.
/// Different components get independent streams, so adding draws to one component never shifts
/// another's; the same (seed, component) always gives the same stream.
pub fn seeded_rng(seed: u64, component: &str) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(splitmix64(seed ^ splitmix64(fnv1a64(component))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(seeded_rng(7, "x"), |r, _: u64| Some(r.random()))
            .collect();
        let b: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(seeded_rng(7, "x"), |r, _: u64| Some(r.random()))
            .collect();
        let c: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(seeded_rng(7, "y"), |r, _: u64| Some(r.random()))
            .collect();
        let d: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(seeded_rng(8, "x"), |r, _: u64| Some(r.random()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }

    #[test]
    fn fnv_matches_reference_vectors() {
        assert_eq!(fnv1a64(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
