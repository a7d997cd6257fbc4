//! The authority of an endpoint URL: host (DNS name, IPv4, bracketed IPv6) and port.
//! The rules are listed in the [`super::url`] module docs.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::url::UrlError;

/// Host, IP and explicit port of an authority without userinfo.
pub(super) fn parse_authority(
    authority: &str,
) -> Result<(String, Option<IpAddr>, Option<u16>), UrlError> {
    let (host, ip, after) = if let Some(literal) = authority.strip_prefix('[') {
        let (inside, after) = literal.split_once(']').ok_or(UrlError::InvalidIpv6)?;
        // Only hex digits, colons and dots: no zone id (`%25…`), no IPvFuture (`v1.…`).
        if !inside
            .bytes()
            .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return Err(UrlError::InvalidIpv6);
        }
        let addr: Ipv6Addr = inside.parse().map_err(|_| UrlError::InvalidIpv6)?;
        (addr.to_string(), Some(IpAddr::V6(addr)), after)
    } else {
        let end = authority.find(':').unwrap_or(authority.len());
        let (raw, after) = authority.split_at(end);
        let (host, v4) = parse_host(raw)?;
        (host, v4.map(IpAddr::V4), after)
    };
    let port = match after {
        "" => None,
        _ => Some(parse_port(
            after.strip_prefix(':').ok_or(UrlError::InvalidHost)?,
        )?),
    };
    Ok((host, ip, port))
}

fn parse_port(digits: &str) -> Result<u16, UrlError> {
    let ok = (1..=5).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit());
    match digits.parse::<u16>() {
        Ok(port) if ok && port != 0 => Ok(port),
        _ => Err(UrlError::InvalidPort),
    }
}

/// A reg-name or IPv4 host: percent-decoded, lowercased, checked as a DNS name.
fn parse_host(raw: &str) -> Result<(String, Option<Ipv4Addr>), UrlError> {
    let decoded = percent_decode(raw)?;
    let host_byte = |b: &u8| b.is_ascii_alphanumeric() || b"-._".contains(b);
    if decoded.is_empty() || decoded.len() > 253 || !decoded.iter().all(host_byte) {
        return Err(UrlError::InvalidHost);
    }
    let host = String::from_utf8(decoded)
        .map_err(|_| UrlError::InvalidHost)?
        .to_ascii_lowercase();
    if host
        .split('.')
        .any(|label| label.is_empty() || label.len() > 63)
    {
        return Err(UrlError::InvalidHost);
    }
    let last = host.rsplit('.').next().unwrap_or("");
    let numeric = last.bytes().all(|b| b.is_ascii_digit())
        || last
            .strip_prefix("0x")
            .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
    if !numeric {
        return Ok((host, None));
    }
    let v4 = dotted_quad(&host).ok_or(UrlError::InvalidHost)?;
    Ok((host, Some(v4)))
}

/// Strict dotted-decimal IPv4: four octets, no leading zeros.
fn dotted_quad(s: &str) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut parts = s.split('.');
    for octet in &mut octets {
        let part = parts.next()?;
        if part.is_empty() || part.len() > 3 || (part.len() > 1 && part.starts_with('0')) {
            return None;
        }
        if !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *octet = part.parse().ok()?;
    }
    parts.next().is_none().then_some(Ipv4Addr::from(octets))
}

fn percent_decode(s: &str) -> Result<Vec<u8>, UrlError> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hi = bytes.next().and_then(hex_value);
            let lo = bytes.next().and_then(hex_value);
            let (Some(hi), Some(lo)) = (hi, lo) else {
                return Err(UrlError::InvalidPercentEncoding);
            };
            out.push((hi << 4) | lo);
        } else {
            out.push(b);
        }
    }
    Ok(out)
}

fn hex_value(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}
