//! Calendar arithmetic and timestamp parsing, with no date library: the loaders only need to turn
//! a handful of textual formats into seconds since the Unix epoch, to order records.

/// Days from 1970-01-01 to the proleptic Gregorian date `y-m-d` (negative before 1970).
/// Howard Hinnant's `days_from_civil` algorithm, exact for every representable year.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400; // [0, 399]
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

/// Seconds since the Unix epoch of the UTC date and time given.
pub fn unix_seconds(y: i64, m: u32, d: u32, hh: u32, mm: u32, ss: u32) -> i64 {
    days_from_civil(y, m, d) * 86_400 + i64::from(hh) * 3600 + i64::from(mm) * 60 + i64::from(ss)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

/// Parses a timestamp into whole seconds since the Unix epoch (fractions are floored). Accepted:
/// - numbers: integer or decimal seconds (`1400269500`, `1400269500.25`);
/// - ISO 8601 / RFC 3339: `2010-10-19T23:55:27Z`, with or without `Z`, an offset (`+02:00`, `-0500`,
///   `+02`) or a fraction (`.123`); a space may replace the `T`; a bare date means midnight;
/// - `YYYY-MM-DD hh:mm:ss` (taken as UTC);
/// - the Chicago data portal's `MM/DD/YYYY hh:mm:ss AM|PM`.
///
/// The error is a short description of what was expected, for the loader to wrap with the file,
/// line and column.
pub fn parse_timestamp(s: &str) -> Result<i64, String> {
    let s = s.trim();
    let bad = || format!("expected a timestamp (unix seconds, ISO 8601 or YYYY-MM-DD hh:mm:ss), got {s:?}");
    if s.is_empty() {
        return Err(bad());
    }
    if let Ok(v) = s.parse::<i64>() {
        return Ok(v);
    }
    let b = s.as_bytes();
    if b[0].is_ascii_digit() || b[0] == b'-' || b[0] == b'+' || b[0] == b'.' {
        if let Ok(v) = s.parse::<f64>() {
            if v.is_finite() && v.abs() < 9.0e15 {
                return Ok(v.floor() as i64);
            }
            return Err(bad());
        }
    }
    if b.len() >= 10 && b[4] == b'-' && b[7] == b'-' {
        return parse_iso(s).ok_or_else(bad);
    }
    if b.len() >= 10 && b[2] == b'/' && b[5] == b'/' {
        return parse_us(s).ok_or_else(bad);
    }
    Err(bad())
}

/// A fixed-width run of ASCII digits as a number.
fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    b.iter().try_fold(0u32, |acc, &c| {
        acc.checked_mul(10)?.checked_add(u32::from(c - b'0'))
    })
}

fn checked_date(y: i64, m: u32, d: u32) -> Option<()> {
    ((1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m)).then_some(())
}

/// `hh:mm[:ss]` at the start of `b`; returns the time of day in seconds and the bytes consumed.
fn time_of_day(b: &[u8]) -> Option<(i64, usize)> {
    if b.len() < 5 || b[2] != b':' {
        return None;
    }
    let hh = digits(&b[0..2])?;
    let mm = digits(&b[3..5])?;
    let (ss, used) = if b.len() >= 8 && b[5] == b':' {
        (digits(&b[6..8])?, 8)
    } else {
        (0, 5)
    };
    if hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    Some((i64::from(hh) * 3600 + i64::from(mm) * 60 + i64::from(ss), used))
}

fn parse_iso(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let y = i64::from(digits(&b[0..4])?);
    let m = digits(&b[5..7])?;
    let d = digits(&b[8..10])?;
    checked_date(y, m, d)?;
    let day = days_from_civil(y, m, d) * 86_400;
    if b.len() == 10 {
        return Some(day);
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let rest = &b[11..];
    let (tod, mut i) = time_of_day(rest)?;
    // Fraction of a second: ignored (floored).
    if i < rest.len() && (rest[i] == b'.' || rest[i] == b',') {
        i += 1;
        let start = i;
        while i < rest.len() && rest[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    let zone = &rest[i..];
    let offset = match zone {
        [] | [b'Z'] | [b'z'] => 0,
        [sign @ (b'+' | b'-'), tail @ ..] => {
            let (h, m) = match tail {
                [h1, h2] => (digits(&[*h1, *h2])?, 0),
                [h1, h2, b':', m1, m2] | [h1, h2, m1, m2] => (digits(&[*h1, *h2])?, digits(&[*m1, *m2])?),
                _ => return None,
            };
            if h > 23 || m > 59 {
                return None;
            }
            let off = i64::from(h) * 3600 + i64::from(m) * 60;
            if *sign == b'+' {
                off
            } else {
                -off
            }
        }
        _ => return None,
    };
    Some(day + tod - offset)
}

fn parse_us(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let m = digits(&b[0..2])?;
    let d = digits(&b[3..5])?;
    let y = i64::from(digits(&b[6..10])?);
    checked_date(y, m, d)?;
    let day = days_from_civil(y, m, d) * 86_400;
    if b.len() == 10 {
        return Some(day);
    }
    if b[10] != b' ' {
        return None;
    }
    let rest = &b[11..];
    let (mut tod, used) = time_of_day(rest)?;
    match rest[used..].trim_ascii() {
        b"" => {}
        meridiem @ (b"AM" | b"am" | b"PM" | b"pm") => {
            let hh = tod / 3600;
            if !(1..=12).contains(&hh) {
                return None;
            }
            if hh == 12 {
                tod -= 12 * 3600;
            }
            if meridiem.eq_ignore_ascii_case(b"PM") {
                tod += 12 * 3600;
            }
        }
        _ => return None,
    }
    Some(day + tod)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_days() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(unix_seconds(2010, 10, 19, 23, 55, 27), 1_287_532_527);
    }

    #[test]
    fn formats() {
        let t = 1_287_532_527;
        assert_eq!(parse_timestamp("1287532527"), Ok(t));
        assert_eq!(parse_timestamp("1287532527.9"), Ok(t));
        assert_eq!(parse_timestamp("2010-10-19T23:55:27Z"), Ok(t));
        assert_eq!(parse_timestamp("2010-10-19T23:55:27"), Ok(t));
        assert_eq!(parse_timestamp("2010-10-19T23:55:27.250Z"), Ok(t));
        assert_eq!(parse_timestamp("2010-10-20T01:55:27+02:00"), Ok(t));
        assert_eq!(parse_timestamp("2010-10-19T18:55:27-0500"), Ok(t));
        assert_eq!(parse_timestamp("2010-10-19 23:55:27"), Ok(t));
        assert_eq!(parse_timestamp(" 2010-10-19 23:55:27 "), Ok(t));
        assert_eq!(parse_timestamp("2010-10-19"), Ok(t - (23 * 3600 + 55 * 60 + 27)));
        assert_eq!(parse_timestamp("10/19/2010 11:55:27 PM"), Ok(t));
        assert_eq!(
            parse_timestamp("01/01/2019 12:00:00 AM"),
            Ok(unix_seconds(2019, 1, 1, 0, 0, 0))
        );
        assert_eq!(
            parse_timestamp("01/01/2019 12:15:00 PM"),
            Ok(unix_seconds(2019, 1, 1, 12, 15, 0))
        );
        for bad in [
            "",
            "abc",
            "2010-13-01",
            "2010-02-30T00:00:00",
            "2010-10-19X23:55:27",
            "2010-10-19T25:00:00",
        ] {
            assert!(parse_timestamp(bad).is_err(), "{bad:?} accepted");
        }
        assert!(parse_timestamp("nan").is_err());
    }
}
