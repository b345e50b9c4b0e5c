//! Leaper, the learned prefetcher (Yang et al., PVLDB 13(11) 2020): a collector of per-key-range
//! access counts, key-range selection (Algorithm 1), features, a gradient-boosted classifier and
//! the prefetcher that plugs into the key-value store as a [`crate::kvstore::WarmUpPolicy`].
