//! Replacement policies: which resident page leaves when the cache needs room.
//!
//! The cache keeps page contents in numbered frames; a [`ReplacementPolicy`] sees only frame
//! numbers and the events on them (a page arrived, was used, was removed) and names a victim on
//! demand. Keeping the decision apart from the storage lets a policy be swapped (exact LRU for the
//! counted figures, CLOCK, a learned one later) without touching the read and write paths.

pub(crate) use super::buffer::Policy;
use crate::storage::PageId;
use crate::{Error, Result};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

/// The number of a frame, the cache slot that holds one resident page. A frame number is stable
/// while its page stays resident and is reused once the page leaves; frames are numbered densely
/// from 0, so a policy can keep its metadata in vectors indexed by frame.
pub type FrameId = u32;

/// How a page came to be resident, for policies that place pages differently by origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Read on a miss: a demand access.
    Demand,
    /// Put in without a demand access ([`super::BufferCache::admit`], [`super::BufferCache::prefetch`],
    /// or a bulk load observed through a [`super::CacheSink`]).
    Prefetch,
    /// Written in place through [`super::BufferCache::write`].
    Write,
}

/// The decision part of a cache. The cache calls these under its lock, so they must be cheap: the
/// hit path calls [`ReplacementPolicy::touched`] once per read.
pub trait ReplacementPolicy: Send {
    /// Short name, as its row of the policy table ([`PolicyDef::name`]) spells it.
    fn name(&self) -> &'static str;
    /// `page` became resident in `frame` (which no resident page holds).
    fn inserted(&mut self, frame: FrameId, page: PageId, how: Arrival);
    /// The page in `frame` was used again (a read hit or an in-place write).
    fn touched(&mut self, frame: FrameId);
    /// The page in `frame` left the cache (evicted, invalidated or cleared): forget the frame.
    fn removed(&mut self, frame: FrameId);
    /// The page in `frame` was evicted to make room for `page`, which arrived in the same frame at
    /// once: [`ReplacementPolicy::removed`] then [`ReplacementPolicy::inserted`], as the default
    /// does; a policy may do both in one step (the miss path calls this once per eviction).
    fn replaced(&mut self, frame: FrameId, page: PageId, how: Arrival) {
        self.removed(frame);
        self.inserted(frame, page, how);
    }
    /// The frame whose page should leave next, or `None` when nothing is resident. The policy keeps
    /// tracking the frame until [`ReplacementPolicy::removed`] is called for it (the cache may fail
    /// to write a dirty victim back and then keeps it).
    fn victim(&mut self) -> Option<FrameId>;
    /// Every page left the cache.
    fn clear(&mut self);
}

/// One row of the policy table ([`super::POLICIES`]): a named replacement policy and how a cache
/// builds it.
pub struct PolicyDef {
    /// The name configurations and result rows use (`lru`, `clock`); [`FromStr`] parses it.
    pub name: &'static str,
    /// One line on what the policy does.
    pub about: &'static str,
    /// The policy's state for a new cache (the shipped policies are dispatched statically; another
    /// one is `Policy::Custom(Box::new(...))`).
    pub(crate) build: fn() -> Policy,
}

/// A named replacement policy: a row of the policy table. It prints, parses and serialises as its
/// name.
#[derive(Clone, Copy)]
pub struct PolicyKind(&'static PolicyDef);

impl PolicyKind {
    /// Exact least-recently-used (the counted figures' policy).
    pub const LRU: PolicyKind = PolicyKind(&super::lru::LRU);
    /// CLOCK (second chance), an approximation of LRU with a cheaper hit.
    pub const CLOCK: PolicyKind = PolicyKind(&super::clock::CLOCK);

    /// Every policy of the table, in its order.
    pub fn all() -> impl Iterator<Item = PolicyKind> {
        super::POLICIES.iter().map(|def| PolicyKind(def))
    }

    /// The name configurations and result rows use (`lru`, `clock`); [`FromStr`] parses it.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// One line on what the policy does.
    pub fn about(self) -> &'static str {
        self.0.about
    }

    /// The policy's state for a new cache.
    pub(crate) fn build(self) -> Policy {
        (self.0.build)()
    }
}

impl Default for PolicyKind {
    fn default() -> Self {
        PolicyKind::LRU
    }
}

impl PartialEq for PolicyKind {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for PolicyKind {}

impl Hash for PolicyKind {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.name.hash(state);
    }
}

impl fmt::Debug for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PolicyKind({})", self.0.name)
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PolicyKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        PolicyKind::all().find(|k| k.name() == s).ok_or_else(|| {
            let names: Vec<&str> = PolicyKind::all().map(PolicyKind::name).collect();
            Error::Config(format!(
                "unknown cache policy {s:?} (expected one of {})",
                names.join(", ")
            ))
        })
    }
}

impl Serialize for PolicyKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for PolicyKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// What a cache is: its replacement policy and its capacity in pages. Serialisable so that a run's
/// configuration can name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// Which page a full cache evicts.
    pub policy: PolicyKind,
    /// Pages the cache holds; 0 disables caching.
    pub capacity_pages: usize,
}

impl CacheConfig {
    /// An exact-LRU cache of `capacity_pages` pages.
    pub fn lru(capacity_pages: usize) -> Self {
        CacheConfig {
            policy: PolicyKind::LRU,
            capacity_pages,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_names_round_trip_and_unknown_names_are_refused() {
        for k in PolicyKind::all() {
            assert_eq!(k.name().parse::<PolicyKind>().unwrap(), k);
            // A cache built from the row runs the policy the row names.
            assert_eq!(k.build().name(), k.name());
        }
        assert_eq!(PolicyKind::all().count(), super::super::POLICIES.len());
        let err = "lfu".parse::<PolicyKind>().unwrap_err().to_string();
        assert!(err.contains("\"lfu\""), "{err}");
    }

    #[test]
    fn config_serialises_with_lowercase_policy_and_refuses_unknown_keys() {
        let cfg = CacheConfig {
            policy: PolicyKind::CLOCK,
            capacity_pages: 128,
        };
        let json = serde_json::to_string(&cfg).unwrap();
        assert_eq!(json, r#"{"policy":"clock","capacity_pages":128}"#);
        assert_eq!(serde_json::from_str::<CacheConfig>(&json).unwrap(), cfg);
        assert!(serde_json::from_str::<CacheConfig>(r#"{"policy":"lru","capacity_pages":1,"x":2}"#).is_err());
        assert!(serde_json::from_str::<CacheConfig>(r#"{"policy":"arc","capacity_pages":1}"#).is_err());
    }
}
