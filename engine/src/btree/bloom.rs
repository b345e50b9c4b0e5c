//! The Bloom filter kept in memory beside each disk B+-tree component.
//!
//! AsterixDB builds one per LSM B+-tree disk component (default false-positive rate 0.01) so that a
//! point lookup skips components that cannot hold the key without reading a page. Hashing is fixed
//! (splitmix64 with Kirsch-Mitzenmacher double hashing, no per-process random state), so the same
//! keys give the same bits, and therefore the same counted I/O, on every run and machine.

/// A fixed-size Bloom filter over `u64` keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BloomFilter {
    words: Vec<u64>,
    num_bits: u64,
    num_hashes: u32,
}

/// splitmix64's finaliser: a bijective 64-bit mix with good avalanche.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl BloomFilter {
    /// A filter sized for `expected_keys` keys at false-positive rate `fp` (0 < fp < 1):
    /// `m = ceil(-n ln fp / ln² 2)` bits (at least 64) and `k = round(m/n · ln 2)` hashes.
    pub fn new(expected_keys: u64, fp: f64) -> BloomFilter {
        assert!(
            fp > 0.0 && fp < 1.0,
            "Bloom false-positive rate {fp} is outside (0, 1)"
        );
        let n = expected_keys.max(1) as f64;
        let ln2 = std::f64::consts::LN_2;
        let bits = (-n * fp.ln() / (ln2 * ln2)).ceil().max(64.0) as u64;
        let words = bits.div_ceil(64);
        let num_bits = words * 64;
        let num_hashes = ((num_bits as f64 / n) * ln2).round().clamp(1.0, 30.0) as u32;
        BloomFilter {
            words: vec![0; words as usize],
            num_bits,
            num_hashes,
        }
    }

    /// The `num_hashes` bit positions of `key`: double hashing `h1 + i·h2 mod m`, where the second
    /// hash is odd so the probe sequence never collapses onto one bit.
    fn probes(num_bits: u64, num_hashes: u32, key: u64) -> impl Iterator<Item = u64> {
        let h1 = splitmix64(key);
        let h2 = splitmix64(h1 ^ 0x5851_F42D_4C95_7F2D) | 1;
        (0..num_hashes as u64).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) % num_bits)
    }

    /// Adds a key.
    pub fn insert(&mut self, key: u64) {
        for bit in Self::probes(self.num_bits, self.num_hashes, key) {
            self.words[(bit / 64) as usize] |= 1 << (bit % 64);
        }
    }

    /// False only if `key` was certainly never inserted.
    pub fn may_contain(&self, key: u64) -> bool {
        Self::probes(self.num_bits, self.num_hashes, key)
            .all(|bit| self.words[(bit / 64) as usize] & (1 << (bit % 64)) != 0)
    }

    /// Size of the filter in bits (a multiple of 64).
    pub fn num_bits(&self) -> u64 {
        self.num_bits
    }

    /// Bits set and probed per key.
    pub fn num_hashes(&self) -> u32 {
        self.num_hashes
    }

    /// Memory the bit array takes, in bytes.
    pub fn size_bytes(&self) -> usize {
        self.words.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserted_keys_are_always_found_and_the_fp_rate_is_near_target() {
        let n = 10_000u64;
        let mut f = BloomFilter::new(n, 0.01);
        for k in 0..n {
            f.insert(k * 7);
        }
        assert!((0..n).all(|k| f.may_contain(k * 7)));
        // ~9.6 bits per key and 7 hashes for 1%.
        assert_eq!(f.num_hashes(), 7);
        assert!(f.num_bits() >= 95_851 && f.num_bits() < 95_851 + 64);
        let probes = 100_000u64;
        let false_positives = (0..probes).filter(|&k| f.may_contain(k * 7 + 3)).count();
        assert!(
            false_positives < 1_500,
            "{false_positives} false positives in {probes}"
        );
        assert!(
            false_positives > 0,
            "a 1% filter over 100k probes should show some positives"
        );
    }

    #[test]
    fn empty_filter_contains_nothing_and_sizing_is_deterministic() {
        let f = BloomFilter::new(0, 0.01);
        assert_eq!(f.num_bits(), 64);
        assert!((0..1000).all(|k| !f.may_contain(k)));
        let mut a = BloomFilter::new(100, 0.05);
        let mut b = BloomFilter::new(100, 0.05);
        for k in [1, 5, 99, u64::MAX] {
            a.insert(k);
            b.insert(k);
        }
        assert_eq!(a, b);
        assert!(BloomFilter::new(1000, 0.001).size_bytes() > BloomFilter::new(1000, 0.1).size_bytes());
    }
}
