//! Device cost profiles: counted I/O in, modelled time out.
//!
//! The engine counts page reads and writes; a [`DeviceProfile`] turns those counts into the time a
//! given class of device would have spent on them (`docs/design.md#measuring`: modelled time is
//! measured CPU time plus counted I/O times the profile's per-page costs). The model is
//! deliberately simple: a random page read costs a fixed access latency plus its transfer time, and
//! a page write is a sequential transfer (the engine only writes pages in bulk loads, which stream
//! whole extents).

use super::IoStats;
use crate::Error;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A class of storage device, with typical published figures for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DeviceProfile {
    /// A datacenter/consumer PCIe NVMe SSD. Random 4 KiB read about 80 us end to end: the access
    /// latency is set to 78 us so that a 4 KiB read (latency + transfer) models to ~80 us, in the
    /// range vendors quote for queue-depth-1 random reads and in line with an O_DIRECT sample taken
    /// on the project's development machine (the sample and its commit are recorded in
    /// `docs/design.md#measuring`). Bandwidths are conservative mid-range figures: ~2 GB/s read,
    /// ~1 GB/s sustained sequential write.
    Nvme,
    /// A SATA SSD: ~100 us random-read latency, bounded by the SATA III link (600 MB/s raw) to
    /// ~500 MB/s reads and ~450 MB/s sustained sequential writes, typical datasheet figures for
    /// mainstream SATA SSDs.
    SataSsd,
    /// A 7,200 rpm hard disk: ~8 ms per random read (about 4 ms average seek plus 4.17 ms average
    /// rotational delay, half a revolution), ~150 MB/s sequential transfer in both directions.
    Hdd,
}

/// Parameters of one profile, in microseconds and bytes per microsecond (1 MB/s is one byte per
/// microsecond; decimal units throughout).
struct Params {
    read_latency_us: f64,
    read_bytes_per_us: f64,
    write_bytes_per_us: f64,
}

impl DeviceProfile {
    /// Every profile, fastest first.
    pub const ALL: [DeviceProfile; 3] = [DeviceProfile::Nvme, DeviceProfile::SataSsd, DeviceProfile::Hdd];

    /// The profile's name as results and the CLI spell it.
    pub fn name(self) -> &'static str {
        match self {
            DeviceProfile::Nvme => "nvme",
            DeviceProfile::SataSsd => "sata-ssd",
            DeviceProfile::Hdd => "hdd",
        }
    }

    fn params(self) -> Params {
        match self {
            DeviceProfile::Nvme => Params {
                read_latency_us: 78.0,
                read_bytes_per_us: 2000.0,
                write_bytes_per_us: 1000.0,
            },
            DeviceProfile::SataSsd => Params {
                read_latency_us: 100.0,
                read_bytes_per_us: 500.0,
                write_bytes_per_us: 450.0,
            },
            DeviceProfile::Hdd => Params {
                read_latency_us: 8000.0,
                read_bytes_per_us: 150.0,
                write_bytes_per_us: 150.0,
            },
        }
    }

    /// Modelled microseconds for one random page read: access latency plus transfer time.
    pub fn read_us(self, page_size: usize) -> f64 {
        let p = self.params();
        p.read_latency_us + page_size as f64 / p.read_bytes_per_us
    }

    /// Modelled microseconds for one page written sequentially (as bulk loads write): transfer
    /// time only, since a streamed extent pays no per-page access latency.
    pub fn write_us(self, page_size: usize) -> f64 {
        page_size as f64 / self.params().write_bytes_per_us
    }

    /// Modelled milliseconds the device would spend on `io` with pages of `page_size` bytes. Syncs
    /// are not priced: the profiles describe page transfers only, so modelled figures stay what
    /// they were before syncs were counted.
    pub fn modelled_io_ms(self, io: IoStats, page_size: usize) -> f64 {
        (io.page_reads as f64 * self.read_us(page_size) + io.page_writes as f64 * self.write_us(page_size))
            / 1000.0
    }

    /// The profile's parameters in one line, for a result's notes.
    pub fn describe(self) -> String {
        let p = self.params();
        format!(
            "{}: random read = {} us latency + page/{} MB/s; sequential write = page/{} MB/s",
            self.name(),
            p.read_latency_us,
            p.read_bytes_per_us,
            p.write_bytes_per_us
        )
    }
}

impl fmt::Display for DeviceProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DeviceProfile {
    type Err = Error;

    /// Parses a profile name (case-insensitive); the error lists the accepted names.
    fn from_str(s: &str) -> Result<Self, Error> {
        let wanted = s.trim();
        DeviceProfile::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(wanted))
            .ok_or_else(|| {
                let names: Vec<&str> = DeviceProfile::ALL.iter().map(|p| p.name()).collect();
                Error::Config(format!(
                    "unknown device profile {s:?}: expected one of {}",
                    names.join(", ")
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn names_round_trip_and_bad_names_list_the_choices() {
        for p in DeviceProfile::ALL {
            assert_eq!(p.to_string().parse::<DeviceProfile>().unwrap(), p);
            assert_eq!(p.name().to_uppercase().parse::<DeviceProfile>().unwrap(), p);
            assert!(p.describe().starts_with(p.name()));
        }
        let err = "floppy".parse::<DeviceProfile>().unwrap_err().to_string();
        assert!(err.contains("floppy"), "{err}");
        for p in DeviceProfile::ALL {
            assert!(err.contains(p.name()), "{err}");
        }
    }

    #[test]
    fn per_page_costs_follow_the_documented_parameters() {
        // NVMe: 78 us + 4096 B / 2000 B/us = 80.048 us for a 4 KiB page.
        assert!(close(DeviceProfile::Nvme.read_us(4096), 80.048));
        assert!(close(DeviceProfile::Nvme.write_us(4096), 4.096));
        assert!(close(
            DeviceProfile::SataSsd.read_us(2048),
            100.0 + 2048.0 / 500.0
        ));
        assert!(close(DeviceProfile::SataSsd.write_us(2048), 2048.0 / 450.0));
        assert!(close(DeviceProfile::Hdd.read_us(2048), 8000.0 + 2048.0 / 150.0));
        assert!(close(DeviceProfile::Hdd.write_us(2048), 2048.0 / 150.0));
        // Bigger pages never cost less.
        for p in DeviceProfile::ALL {
            assert!(p.read_us(4096) > p.read_us(2048));
            assert!(p.write_us(4096) > p.write_us(2048));
        }
    }

    #[test]
    fn modelled_time_adds_reads_and_writes_and_orders_the_devices() {
        let io = IoStats {
            page_reads: 1000,
            page_writes: 500,
            syncs: 7,
        };
        for p in DeviceProfile::ALL {
            assert_eq!(p.modelled_io_ms(IoStats::default(), 2048), 0.0);
            let expected = (1000.0 * p.read_us(2048) + 500.0 * p.write_us(2048)) / 1000.0;
            assert!(close(p.modelled_io_ms(io, 2048), expected));
        }
        let [nvme, sata, hdd] = DeviceProfile::ALL.map(|p| p.modelled_io_ms(io, 2048));
        assert!(hdd > sata && sata > nvme, "{hdd} {sata} {nvme}");
        let writes_only = IoStats {
            page_reads: 0,
            page_writes: 10,
            ..IoStats::default()
        };
        let [nvme, sata, hdd] = DeviceProfile::ALL.map(|p| p.modelled_io_ms(writes_only, 2048));
        assert!(hdd > sata && sata > nvme, "{hdd} {sata} {nvme}");
    }
}
