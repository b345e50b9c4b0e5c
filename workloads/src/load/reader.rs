//! Reading a data file line by line, plain or gzip-compressed (recognised by its magic bytes, so
//! a misnamed file still reads), and splitting lines into fields.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use super::Sink;
use crate::WorkloadError;

/// The longest line any data file may hold, its line ending included: 1 MiB, far above any real
/// record (a GeoLife or CSV line is under 200 bytes). A longer line is
/// [`WorkloadError::Malformed`] naming the file and line, so that a file that is one huge line (a
/// gzip stream that inflates without a newline) is refused after reading at most this much,
/// instead of being held in memory whole.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// The UTF-8 byte order mark, dropped from the start of a file's first line.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// A line's 1-based number and its text, or `Err(())` if it is not UTF-8.
pub(crate) type Line<'a> = (usize, Result<&'a str, ()>);

pub(crate) struct LineReader {
    inner: Box<dyn BufRead>,
    buf: Vec<u8>,
    /// 1-based number of the line last returned.
    line: usize,
    path: PathBuf,
}

impl LineReader {
    pub(crate) fn open(path: &Path) -> Result<LineReader, WorkloadError> {
        let io = |error| WorkloadError::Io {
            path: path.to_path_buf(),
            error,
        };
        let mut file = BufReader::with_capacity(1 << 16, File::open(path).map_err(io)?);
        let gz = file.fill_buf().map_err(io)?.starts_with(&[0x1f, 0x8b]);
        let inner: Box<dyn BufRead> = if gz {
            Box::new(BufReader::with_capacity(1 << 16, MultiGzDecoder::new(file)))
        } else {
            Box::new(file)
        };
        Ok(LineReader {
            inner,
            buf: Vec::with_capacity(256),
            line: 0,
            path: path.to_path_buf(),
        })
    }

    /// The next non-blank line (a header, or a file's first record), with its number; `None` at the
    /// end of the file. A line that is not UTF-8 is an error here: nothing after it can be read sensibly.
    pub(crate) fn first_data_line(&mut self) -> Result<Option<(usize, String)>, WorkloadError> {
        while let Some((no, line)) = self.next_line()? {
            let Ok(line) = line else {
                return Err(WorkloadError::Malformed {
                    path: self.path.clone(),
                    line: no,
                    reason: "not valid UTF-8".into(),
                });
            };
            if !line.trim().is_empty() {
                return Ok(Some((no, line.to_string())));
            }
        }
        Ok(None)
    }

    /// Feeds every remaining data line to `parse`: blank lines are skipped, a line that is not
    /// UTF-8 is malformed, every other line is counted as a data line, and an `Err(reason)` from
    /// `parse` records the line as malformed (an error, or a skip with `skip_malformed`).
    pub(crate) fn for_each_data_line(
        &mut self,
        sink: &mut Sink,
        mut parse: impl FnMut(&str, &mut Sink) -> Result<(), String>,
    ) -> Result<(), WorkloadError> {
        while !sink.full() {
            let Some((no, line)) = self.next_line()? else {
                break;
            };
            let Ok(line) = line else {
                sink.malformed(no, "not valid UTF-8".to_string())?;
                continue;
            };
            if line.trim().is_empty() {
                continue;
            }
            sink.data_line();
            if let Err(reason) = parse(line, sink) {
                sink.malformed(no, reason)?;
            }
        }
        Ok(())
    }

    /// The next line (without its line ending) and its 1-based number; `Err(())` inside the
    /// option for a line that is not UTF-8, `None` at the end of the file. A line longer than
    /// [`MAX_LINE_BYTES`] is [`WorkloadError::Malformed`], found after reading that much of it.
    pub(crate) fn next_line(&mut self) -> Result<Option<Line<'_>>, WorkloadError> {
        self.buf.clear();
        let n = (&mut self.inner)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|error| WorkloadError::Io {
                path: self.path.clone(),
                error,
            })?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        if n > MAX_LINE_BYTES {
            return Err(WorkloadError::Malformed {
                path: self.path.clone(),
                line: self.line,
                reason: format!(
                    "line longer than {MAX_LINE_BYTES} bytes (1 MiB), the most a data file's line may hold"
                ),
            });
        }
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        // A UTF-8 byte order mark (spreadsheet exports write one) is not part of the first field.
        if self.line == 1 && self.buf.starts_with(UTF8_BOM) {
            self.buf.drain(..UTF8_BOM.len());
        }
        Ok(Some((self.line, std::str::from_utf8(&self.buf).map_err(|_| ()))))
    }
}

/// The first line of a file (decompressed), for format guessing; `None` if unreadable.
pub(crate) fn first_line(path: &Path) -> Option<String> {
    let mut r = LineReader::open(path).ok()?;
    while let Some((_, line)) = r.next_line().ok()? {
        let line = line.ok()?;
        if !line.trim().is_empty() {
            return Some(line.to_string());
        }
    }
    None
}

/// Every line of `path` (plain or gzip), trimmed, skipping blank lines and lines starting with
/// one of `comments`, fed to `each` with its 1-based number. A line that is not UTF-8 or longer
/// than [`MAX_LINE_BYTES`] is [`WorkloadError::Malformed`].
pub(crate) fn for_each_line(
    path: &Path,
    comments: &[char],
    mut each: impl FnMut(usize, &str) -> Result<(), WorkloadError>,
) -> Result<(), WorkloadError> {
    let mut lines = LineReader::open(path)?;
    while let Some((no, line)) = lines.next_line()? {
        let Ok(line) = line else {
            return Err(WorkloadError::Malformed {
                path: path.to_path_buf(),
                line: no,
                reason: "not valid UTF-8".into(),
            });
        };
        let t = line.trim();
        if t.is_empty() || t.starts_with(comments) {
            continue;
        }
        each(no, t)?;
    }
    Ok(())
}

/// Splits delimited lines into fields, honouring double quotes as CSV does (`"a, b"` is one field,
/// `""` inside quotes is a quote). A quoted field cannot span lines.
#[derive(Default)]
pub(crate) struct Fields {
    buf: String,
    ranges: Vec<(usize, usize)>,
}

impl Fields {
    pub(crate) fn split(&mut self, line: &str, delim: u8) -> Result<(), String> {
        self.buf.clear();
        self.ranges.clear();
        let delim = char::from(delim);
        let mut chars = line.chars().peekable();
        loop {
            let start = self.buf.len();
            // Skip spaces before a quote so that `a, "b"` works.
            let lead: String = std::iter::from_fn(|| chars.next_if(|&c| c == ' ' && c != delim)).collect();
            if chars.peek() == Some(&'"') {
                chars.next();
                loop {
                    match chars.next() {
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            self.buf.push('"');
                        }
                        Some('"') => break,
                        Some(c) => self.buf.push(c),
                        None => return Err(format!("field {} has an unterminated quote", self.ranges.len())),
                    }
                }
                while chars.next_if(|&c| c == ' ').is_some() {}
                match chars.peek() {
                    None => {}
                    Some(&c) if c == delim => {}
                    Some(&c) => {
                        return Err(format!(
                            "field {}: unexpected {c:?} after a closing quote",
                            self.ranges.len()
                        ))
                    }
                }
            } else {
                self.buf.push_str(&lead);
                while let Some(c) = chars.next_if(|&c| c != delim) {
                    self.buf.push(c);
                }
            }
            self.ranges.push((start, self.buf.len()));
            if chars.next().is_none() {
                return Ok(());
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Field `i`, trimmed; `None` past the last field.
    pub(crate) fn get(&self, i: usize) -> Option<&str> {
        self.ranges.get(i).map(|&(a, b)| self.buf[a..b].trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &str, d: u8) -> Result<Vec<String>, String> {
        let mut f = Fields::default();
        f.split(line, d)?;
        Ok((0..f.len()).map(|i| f.get(i).unwrap().to_string()).collect())
    }

    #[test]
    fn splits_plain_and_quoted_fields() {
        assert_eq!(split("a,b,,c", b',').unwrap(), vec!["a", "b", "", "c"]);
        assert_eq!(split("", b',').unwrap(), vec![""]);
        assert_eq!(split("x\t y \tz", b'\t').unwrap(), vec!["x", "y", "z"]);
        assert_eq!(
            split(r#"1,"a, ""b""",3"#, b',').unwrap(),
            vec!["1", r#"a, "b""#, "3"]
        );
        assert_eq!(split(r#"1, "q" ,3"#, b',').unwrap(), vec!["1", "q", "3"]);
        assert!(split(r#"1,"open,3"#, b',').unwrap_err().contains("unterminated"));
        assert!(split(r#"1,"a"b,3"#, b',')
            .unwrap_err()
            .contains("after a closing quote"));
    }
}
