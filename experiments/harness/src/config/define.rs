//! [`config!`](crate::config!): an experiment's config struct written once, its `--set` keys' help
//! taken from the fields' doc comments.

/// The help of a config or of a part that configs flatten (such as
/// [`StorageConfig`](super::StorageConfig)): every key with one line of help, in the order
/// `lsmlab params` lists them. [`config!`](crate::config!) writes it from the fields' doc comments.
pub trait ConfigPart {
    /// Every key with its help; must name exactly the serialised keys ([`super::keys`] checks it).
    fn help() -> Vec<super::KeyHelp>;
}

/// Declares a config struct (or a part that configs flatten) and its help from the fields' docs.
///
/// It writes the struct with `#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]` and
/// `#[serde(deny_unknown_fields)]`, and implements [`ConfigPart`] so that every field is a `--set`
/// key whose help (`lsmlab params`) is the field's `///` doc: its lines trimmed and joined with
/// spaces, so write it as the one line a user reads. A `#[serde(flatten)]` field contributes the
/// help of its type (itself declared with `config!`, or implementing [`ConfigPart`]) in its place.
/// Every other attribute (`#[serde(with = ..)]`, `#[serde(default = ..)]`, a further
/// `#[derive(..)]` on the struct, ...) passes through to the struct unchanged. A field without a
/// doc comment does not compile. The derives name `::serde`, so the crate using it depends on
/// `serde` (with `derive`), as every experiment crate does.
///
/// A whole config then implements [`Config`](super::Config): `impl Config for X {}`, or with a
/// `validate` when it has range checks. Adding an experiment is one file: the `config!` struct, its
/// `Config` impl and a [`TypedExperiment`](crate::experiment::TypedExperiment) whose `meta` names
/// it; then one line in the paper's experiment list.
///
/// ```
/// use lsmlab_harness::config::{self, check, Config, ConfigPart, StorageConfig};
///
/// lsmlab_harness::config! {
///     /// The demo's parameters.
///     pub struct DemoConfig {
///         /// records loaded before measuring
///         pub records: u64,
///         /// layouts to compare: paginated or
///         /// single-page
///         #[serde(default)]
///         pub layouts: Vec<String>,
///         #[serde(flatten)]
///         pub storage: StorageConfig,
///     }
/// }
///
/// impl Config for DemoConfig {
///     fn validate(&self) -> anyhow::Result<()> {
///         check("records", self.records, self.records >= 1, "at least 1")?;
///         self.storage.validate()
///     }
/// }
///
/// let demo = DemoConfig { records: 10, layouts: vec![], storage: StorageConfig::with_cache_pages(4) };
/// let keys = config::keys(&demo).unwrap();
/// assert_eq!((keys[0].key, keys[0].help), ("records", "records loaded before measuring"));
/// assert_eq!(keys[1].help, "layouts to compare: paginated or single-page");
/// assert_eq!(keys[2].key, "page_size"); // the flattened part's keys, in its place
/// assert_eq!(keys.len(), 2 + StorageConfig::help().len());
/// ```
///
/// A key without help is refused when it is written, not when `lsmlab params` runs:
///
/// ```compile_fail
/// lsmlab_harness::config! {
///     pub struct Undocumented {
///         pub records: u64,
///     }
/// }
/// ```
#[macro_export]
macro_rules! config {
    (
        $(#[$($sattr:tt)*])*
        $vis:vis struct $name:ident {
            $(
                $(#[$($fattr:tt)*])*
                $fvis:vis $field:ident : $ty:ty
            ),* $(,)?
        }
    ) => {
        $(#[$($sattr)*])*
        #[derive(Clone, Debug, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        $vis struct $name {
            $(
                $(#[$($fattr)*])*
                $fvis $field: $ty,
            )*
        }

        impl $crate::config::ConfigPart for $name {
            fn help() -> ::std::vec::Vec<$crate::config::KeyHelp> {
                #[allow(unused_mut)]
                let mut help = ::std::vec::Vec::new();
                $(
                    $crate::__config_field_help!(help, $field, $ty, [], [$([$($fattr)*])*]);
                )*
                help
            }
        }
    };
}

/// One field's help for [`config!`]: scans its attributes for `serde(flatten)` and doc lines.
#[doc(hidden)]
#[macro_export]
macro_rules! __config_field_help {
    ($help:ident, $field:ident, $ty:ty, [$($doc:expr),*], [[serde(flatten)] $($rest:tt)*]) => {
        $help.extend(<$ty as $crate::config::ConfigPart>::help());
    };
    ($help:ident, $field:ident, $ty:ty, [$($doc:expr),*], [[doc = $line:expr] $($rest:tt)*]) => {
        $crate::__config_field_help!($help, $field, $ty, [$($doc,)* $line], [$($rest)*]);
    };
    ($help:ident, $field:ident, $ty:ty, [$($doc:expr),*], [[$($other:tt)*] $($rest:tt)*]) => {
        $crate::__config_field_help!($help, $field, $ty, [$($doc),*], [$($rest)*]);
    };
    ($help:ident, $field:ident, $ty:ty, [], []) => {
        ::core::compile_error!(concat!(
            "config field `",
            stringify!($field),
            "` has no /// doc comment: it is the key's help in `lsmlab params`"
        ));
    };
    ($help:ident, $field:ident, $ty:ty, [$($doc:expr),+], []) => {
        $help.push((stringify!($field), {
            const LINES: &[&str] = &[$($doc),+];
            const LEN: usize = $crate::config::doc_line_len(LINES);
            const BYTES: [u8; LEN] = $crate::config::doc_line::<LEN>(LINES);
            const LINE: &str = match ::core::str::from_utf8(&BYTES) {
                Ok(line) => line,
                Err(_) => panic!("a doc comment that is not UTF-8"),
            };
            LINE
        }));
    };
}

/// The length of [`doc_line`]'s result.
#[doc(hidden)]
pub const fn doc_line_len(lines: &[&str]) -> usize {
    let mut len = 0;
    let mut i = 0;
    while i < lines.len() {
        len = doc_line_into(lines[i].as_bytes(), &mut [], len);
        i += 1;
    }
    len
}

/// A doc comment's lines (each `///` one, or text with `\n`s) trimmed and joined with single
/// spaces, blank lines dropped: a key's help line, computed at compile time by
/// [`config!`](crate::config!).
#[doc(hidden)]
pub const fn doc_line<const N: usize>(lines: &[&str]) -> [u8; N] {
    let mut out = [0u8; N];
    let mut len = 0;
    let mut i = 0;
    while i < lines.len() {
        len = doc_line_into(lines[i].as_bytes(), &mut out, len);
        i += 1;
    }
    out
}

/// Appends `raw`'s lines to the `len` bytes joined so far, writing into `out` when it is long
/// enough (else only counting); returns the new length.
const fn doc_line_into(raw: &[u8], out: &mut [u8], mut len: usize) -> usize {
    let mut start = 0;
    while start < raw.len() {
        let mut end = start;
        while end < raw.len() && raw[end] != b'\n' {
            end += 1;
        }
        let next = end + 1;
        while start < end && raw[start].is_ascii_whitespace() {
            start += 1;
        }
        while end > start && raw[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
        if start < end {
            if len > 0 {
                if len < out.len() {
                    out[len] = b' ';
                }
                len += 1;
            }
            while start < end {
                if len < out.len() {
                    out[len] = raw[start];
                }
                len += 1;
                start += 1;
            }
        }
        start = next;
    }
    len
}

#[cfg(test)]
mod tests {
    use super::super::{keys, Config, KeyHelp, StorageConfig};
    use super::*;

    #[test]
    fn doc_lines_are_trimmed_and_joined() {
        const LINES: &[&str] = &[" first line  ", "   second, é\n\n third\n", "", " fourth"];
        const LEN: usize = doc_line_len(LINES);
        assert_eq!(
            &doc_line::<LEN>(LINES),
            "first line second, é third fourth".as_bytes()
        );
        assert_eq!(doc_line_len(&[""]), 0);
    }

    crate::config! {
        /// A part with a pass-through derive and serde attribute.
        #[derive(Default)]
        struct Part {
            /// the part's
            ///   only key
            #[serde(default = "seven")]
            part_key: u32,
        }
    }

    fn seven() -> u32 {
        7
    }

    crate::config! {
        /// A whole config: its help follows the fields, the flattened parts in their places.
        pub(crate) struct Whole {
            /// first
            a: u32,
            #[serde(flatten)]
            part: Part,
            #[serde(flatten)]
            storage: StorageConfig,
            #[serde(with = "crate::config::text_list")]
            /// last, after an attribute
            b: Vec<u32>,
        }
    }

    impl Config for Whole {}

    #[test]
    fn help_comes_from_the_docs_and_the_flattened_parts() {
        let help: Vec<KeyHelp> = <Whole as ConfigPart>::help();
        let mut expected: Vec<KeyHelp> = vec![("a", "first"), ("part_key", "the part's only key")];
        expected.extend(<StorageConfig as ConfigPart>::help());
        expected.push(("b", "last, after an attribute"));
        assert_eq!(help, expected);
        let whole = Whole {
            a: 1,
            part: Part::default(),
            storage: StorageConfig::with_cache_pages(2),
            b: vec![3],
        };
        assert_eq!(keys(&whole).unwrap().len(), expected.len());
        let map = super::super::to_map(&whole).unwrap();
        assert_eq!(
            map["b"],
            serde_json::json!(["3"]),
            "serde attributes pass through"
        );
        let mut without = map.clone();
        without.remove("part_key");
        let back: Whole = serde_json::from_value(serde_json::Value::Object(without)).unwrap();
        assert_eq!(back.part.part_key, 7);
        let mut unknown = map;
        unknown.insert("nope".into(), 1.into());
        assert!(serde_json::from_value::<Whole>(serde_json::Value::Object(unknown)).is_err());
    }
}
