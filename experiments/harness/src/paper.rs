//! One descriptor per paper ([`Paper`]): its id, title, experiments, claims file and trace
//! families. The binary lists the papers once; the experiments `lsmlab` knows, the claims the
//! report judges, the traces `lsmlab gen` writes and the targets `make` accepts all derive from
//! that list ([`Papers`]), so a new paper is one folder and one line.

use crate::claims::{self, ClaimSet};
use crate::experiment::Experiment;
use crate::plot::{FigureSpec, FixedStyle};
use crate::trace::TraceFamily;

/// What kind of entry a [`Paper`] is, which decides how `make` names its experiments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaperKind {
    /// A paper reproduced: its experiments are `<id>-<what>` (or `<id>` itself) and `make <id>`
    /// runs them all.
    Paper,
    /// Experiments across the papers (`combined`): named `<id>` or `<id>-<what>`.
    CrossPaper,
    /// One experiment of lsmlab's own, named `<id>`.
    Standalone,
}

/// One paper (or cross-paper or standalone entry) as the harness sees it.
pub struct Paper {
    /// The prefix of its experiments' names and `make` targets (`rum`); a standalone entry's
    /// experiment name.
    pub id: &'static str,
    /// The name its experiments write into result files (`LSM RUM-tree`), which claims match.
    pub title: &'static str,
    /// Whether it is a paper of several experiments or a standalone entry.
    pub kind: PaperKind,
    /// Its experiments, in the order of its evaluation.
    pub experiments: Vec<&'static dyn Experiment>,
    /// Its claims file, compiled in: (file name, text).
    pub claims: Option<(&'static str, &'static str)>,
    /// The trace families its experiments replay.
    pub traces: Vec<&'static dyn TraceFamily>,
    /// The labels its figures draw in a fixed style (strategies, phases, systems).
    pub styles: &'static [FixedStyle],
    /// The declared figures of each of its experiments, by experiment name (empty for an
    /// experiment whose figures are drawn by code); tests check them against the committed rows.
    pub figures: fn(&str) -> &'static [FigureSpec],
}

/// Every paper a build knows, in the report's order.
pub struct Papers(pub Vec<Paper>);

impl Papers {
    /// Every experiment, paper by paper.
    pub fn experiments(&self) -> Vec<&'static dyn Experiment> {
        self.0
            .iter()
            .flat_map(|p| p.experiments.iter().copied())
            .collect()
    }

    /// The claim files, paper by paper.
    pub fn claim_sources(&self) -> Vec<(&'static str, &'static str)> {
        self.0.iter().filter_map(|p| p.claims).collect()
    }

    /// The claim files parsed and checked.
    pub fn claims(&self) -> anyhow::Result<Vec<ClaimSet>> {
        claims::parse_all(&self.claim_sources())
    }

    /// Every trace family, paper by paper.
    pub fn trace_families(&self) -> Vec<&'static dyn TraceFamily> {
        self.0.iter().flat_map(|p| p.traces.iter().copied()).collect()
    }

    /// The declared figures of `experiment` (empty when no paper lists it or it declares none).
    pub fn figure_specs(&self, experiment: &str) -> &'static [FigureSpec] {
        self.0
            .iter()
            .find(|p| p.experiments.iter().any(|e| e.name() == experiment))
            .map_or(&[], |p| (p.figures)(experiment))
    }

    /// Every paper's fixed figure styles, as [`crate::plot::install_styles`] takes them.
    pub fn styles(&self) -> Vec<FixedStyle> {
        self.0.iter().flat_map(|p| p.styles.iter().copied()).collect()
    }

    /// The ids of the entries of `kind`.
    pub fn ids(&self, kind: PaperKind) -> Vec<&'static str> {
        self.0.iter().filter(|p| p.kind == kind).map(|p| p.id).collect()
    }

    /// The experiments `target` stands for, as `make <target>` runs them: every experiment of the
    /// entry whose id it is, or the experiment it names; `None` when it is neither.
    pub fn target(&self, target: &str) -> Option<Vec<&'static str>> {
        if let Some(p) = self.0.iter().find(|p| p.id == target) {
            return Some(p.experiments.iter().map(|e| e.name()).collect());
        }
        self.experiments()
            .into_iter()
            .find(|e| e.name() == target)
            .map(|e| vec![e.name()])
    }

    /// Checks the list: ids unique; every experiment named after its entry (`<id>-<what>` or
    /// `<id>`; a standalone one `<id>` only) and claiming the entry's title; names unique and of
    /// lowercase letters, digits and dashes.
    pub fn check(&self) -> anyhow::Result<()> {
        let mut names: Vec<&str> = Vec::new();
        for (i, p) in self.0.iter().enumerate() {
            anyhow::ensure!(
                !self.0[..i].iter().any(|o| o.id == p.id),
                "paper id `{}` is listed twice",
                p.id
            );
            for e in &p.experiments {
                let name = e.name();
                anyhow::ensure!(
                    name.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                    "experiment `{name}`: a name is lowercase letters, digits and dashes"
                );
                anyhow::ensure!(!names.contains(&name), "experiment `{name}` is listed twice");
                names.push(name);
                let named = match p.kind {
                    PaperKind::Paper | PaperKind::CrossPaper => {
                        name == p.id
                            || name
                                .strip_prefix(p.id)
                                .is_some_and(|rest| rest.len() > 1 && rest.starts_with('-'))
                    }
                    PaperKind::Standalone => name == p.id,
                };
                anyhow::ensure!(
                    named,
                    "experiment `{name}` is not named after its entry `{}`",
                    p.id
                );
                anyhow::ensure!(
                    e.paper() == p.title,
                    "experiment `{name}` says its paper is `{}`, its entry `{}` is titled `{}`",
                    e.paper(),
                    p.id,
                    p.title
                );
            }
        }
        self.check_styles()
    }

    /// Fixed styles: each label once (case- and space-blind), each palette index in range, and the
    /// labels with a fixed marker (series drawn side by side) each in a colour of their own.
    fn check_styles(&self) -> anyhow::Result<()> {
        let styles = self.styles();
        for (i, s) in styles.iter().enumerate() {
            let key = crate::plot::canonical(s.label);
            anyhow::ensure!(
                s.color < crate::plot::PALETTE.len(),
                "style of `{}`: palette index {} is out of range",
                s.label,
                s.color
            );
            for t in &styles[..i] {
                anyhow::ensure!(
                    crate::plot::canonical(t.label) != key,
                    "label `{}` has a fixed style twice",
                    s.label
                );
                anyhow::ensure!(
                    s.marker.is_none() || t.marker.is_none() || s.color != t.color,
                    "`{}` and `{}` are both marked series in palette colour {}",
                    t.label,
                    s.label,
                    s.color
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{FAKE, OTHER};

    fn paper(id: &'static str, kind: PaperKind, experiments: Vec<&'static dyn Experiment>) -> Paper {
        Paper {
            id,
            title: "Fake paper",
            kind,
            experiments,
            claims: None,
            traces: Vec::new(),
            styles: &[],
            figures: |_| &[],
        }
    }

    #[test]
    fn the_check_refuses_misnamed_repeated_or_mistitled_experiments() {
        // The fakes are called `fake` and `other`: standalone entries of those ids pass.
        let ok = Papers(vec![
            paper("fake", PaperKind::Standalone, vec![&FAKE]),
            paper("other", PaperKind::CrossPaper, vec![&OTHER]),
        ]);
        ok.check().unwrap();
        assert_eq!(ok.experiments().len(), 2);
        assert_eq!(ok.ids(PaperKind::Standalone), ["fake"]);
        // A paper's experiments are `<id>-<what>` or `<id>`: `fake` is not `fak-...`.
        Papers(vec![paper("fake", PaperKind::Paper, vec![&FAKE])])
            .check()
            .unwrap();
        let e = Papers(vec![paper("fak", PaperKind::Paper, vec![&FAKE])])
            .check()
            .unwrap_err();
        assert!(e.to_string().contains("not named after its entry `fak`"), "{e}");
        let e = Papers(vec![paper("other", PaperKind::Standalone, vec![&FAKE])])
            .check()
            .unwrap_err();
        assert!(e.to_string().contains("not named after its entry `other`"), "{e}");
        let e = Papers(vec![
            paper("fake", PaperKind::Standalone, vec![&FAKE]),
            paper("fake", PaperKind::Standalone, vec![]),
        ])
        .check()
        .unwrap_err();
        assert!(e.to_string().contains("listed twice"), "{e}");
        let mut wrong = paper("fake", PaperKind::Standalone, vec![&FAKE]);
        wrong.title = "Another paper";
        let e = Papers(vec![wrong]).check().unwrap_err();
        assert!(e.to_string().contains("is titled `Another paper`"), "{e}");
    }
}
