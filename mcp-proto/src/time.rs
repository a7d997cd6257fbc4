//! Time as the machines see it: a point on the caller's own monotonic timeline.
//!
//! The machines never read a clock. Every input carries `now`, an [`Instant`] the caller
//! makes from whatever clock its platform has: `std::time::Instant` on a desktop (the
//! adapters keep a base and count from it), `performance.now()` in a browser, a tick
//! counter on a microcontroller, or a fake clock in a test. Only differences matter: the
//! machines add durations to `now` to make deadlines and compare instants, so any origin
//! works as long as it never moves backwards.
//!
//! ```
//! use std::time::Duration;
//! use mcp_proto::Instant;
//!
//! let start = Instant::ZERO;
//! let later = start + Duration::from_millis(1500);
//! assert_eq!(later.saturating_duration_since(start), Duration::from_millis(1500));
//! assert_eq!(start.saturating_duration_since(later), Duration::ZERO);
//! assert_eq!(Instant::from_millis(1500), later);
//! ```

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::time::Duration;

/// A point in time, in nanoseconds since an origin the caller chose.
///
/// Arithmetic saturates instead of overflowing: a deadline of `now + Duration::MAX` is
/// simply "never".
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant {
    nanos: u128,
}

impl Instant {
    /// The origin of the timeline.
    pub const ZERO: Instant = Instant { nanos: 0 };

    /// The instant `elapsed` after the origin.
    #[must_use]
    pub const fn from_elapsed(elapsed: Duration) -> Instant {
        Instant {
            nanos: elapsed.as_nanos(),
        }
    }

    /// The instant `millis` milliseconds after the origin.
    #[must_use]
    pub const fn from_millis(millis: u64) -> Instant {
        Instant {
            nanos: millis as u128 * 1_000_000,
        }
    }

    /// The instant `micros` microseconds after the origin.
    #[must_use]
    pub const fn from_micros(micros: u64) -> Instant {
        Instant {
            nanos: micros as u128 * 1_000,
        }
    }

    /// How far this instant is from the origin.
    #[must_use]
    pub fn elapsed_since_origin(self) -> Duration {
        nanos_to_duration(self.nanos)
    }

    /// The time from `earlier` to `self`, or zero when `earlier` is later.
    #[must_use]
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        nanos_to_duration(self.nanos.saturating_sub(earlier.nanos))
    }

    /// The time from `earlier` to `self`, or `None` when `earlier` is later.
    #[must_use]
    pub fn checked_duration_since(self, earlier: Instant) -> Option<Duration> {
        self.nanos.checked_sub(earlier.nanos).map(nanos_to_duration)
    }

    /// `self + d`, saturating at the end of the timeline.
    #[must_use]
    pub fn saturating_add(self, d: Duration) -> Instant {
        Instant {
            nanos: self
                .nanos
                .saturating_add(d.as_nanos())
                .min(Duration::MAX.as_nanos()),
        }
    }
}

fn nanos_to_duration(nanos: u128) -> Duration {
    let Ok(secs) = u64::try_from(nanos / 1_000_000_000) else {
        return Duration::MAX;
    };
    // The remainder is below 10^9, so it fits.
    let sub = u32::try_from(nanos % 1_000_000_000).unwrap_or(0);
    Duration::new(secs, sub)
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        self.saturating_add(d)
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        Instant {
            nanos: self.nanos.saturating_sub(d.as_nanos()),
        }
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, d: Duration) {
        *self = *self - d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturates at zero when `earlier` is later (std's `Instant` does the same).
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t+{:?}", self.elapsed_since_origin())
    }
}

/// `unix_ms` (milliseconds since 1970-01-01 UTC, a wall-clock reading the caller made)
/// as an RFC 3339 UTC time with milliseconds, as the protocol's timestamps are written.
/// Pure arithmetic: nothing here reads a clock.
///
/// ```
/// assert_eq!(mcp_proto::time::rfc3339_utc(951_782_400_123), "2000-02-29T00:00:00.123Z");
/// ```
#[must_use]
pub fn rfc3339_utc(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        unix_ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_at_both_ends() {
        let t = Instant::from_micros(5);
        assert_eq!(t - Duration::from_secs(1), Instant::ZERO);
        let far = t + Duration::MAX;
        assert!(far > t);
        assert_eq!(
            far + Duration::MAX,
            far + Duration::from_secs(1) + Duration::MAX
        );
        assert_eq!(Instant::ZERO - t, Duration::ZERO);
        assert_eq!(Instant::ZERO.checked_duration_since(t), None);
        assert_eq!(
            t.checked_duration_since(Instant::ZERO),
            Some(Duration::from_micros(5))
        );
        assert_eq!(far.elapsed_since_origin(), Duration::MAX);
    }

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_utc(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339_utc(1_764_634_225_000), "2025-12-02T00:10:25.000Z");
    }

    #[test]
    fn debug_shows_the_offset() {
        assert_eq!(format!("{:?}", Instant::from_millis(1500)), "t+1.5s");
    }
}
