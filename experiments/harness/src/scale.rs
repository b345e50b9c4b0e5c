//! How big a run is. Experiments choose their defaults per scale.

use std::fmt;
use std::str::FromStr;

use anyhow::anyhow;

/// How big a run is: `tiny` for CI and quick checks, `small` for a laptop, `paper` for the papers'
/// sizes. Experiments choose their defaults per scale.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
// The variants stay undocumented: a `ValueEnum` variant's doc comment becomes CLI help text, and
// `--scale`'s help lists the bare names (the enum's doc says what each means).
#[allow(missing_docs)]
pub enum Scale {
    Tiny,
    Small,
    Paper,
}

impl Scale {
    /// Every scale, smallest first.
    pub const ALL: [Scale; 3] = [Scale::Tiny, Scale::Small, Scale::Paper];

    /// The name used on the command line, in file paths and in result files.
    pub fn as_str(self) -> &'static str {
        match self {
            Scale::Tiny => "tiny",
            Scale::Small => "small",
            Scale::Paper => "paper",
        }
    }
}

impl fmt::Display for Scale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scale {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Self> {
        Scale::ALL
            .into_iter()
            .find(|scale| scale.as_str() == s)
            .ok_or_else(|| anyhow!("unknown scale `{s}`: expected one of tiny, small, paper"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_round_trips_through_text_and_json() {
        for scale in Scale::ALL {
            assert_eq!(scale.to_string().parse::<Scale>().unwrap(), scale);
            let json = serde_json::to_string(&scale).unwrap();
            assert_eq!(json, format!("\"{scale}\""));
        }
        let err = "huge".parse::<Scale>().unwrap_err().to_string();
        assert!(err.contains("huge") && err.contains("tiny"), "{err}");
    }
}
