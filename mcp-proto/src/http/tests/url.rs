//! Endpoint URL parser: accepted and rejected tables.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::http::{EndpointUrl, Scheme, UrlError};

#[test]
fn accepted() {
    // (input, allow insecure remote, host, port, Host header, target, origin)
    let table = [
        (
            "http://[::1]:8080/mcp",
            false,
            "::1",
            8080,
            "[::1]:8080",
            "/mcp",
            "http://[::1]:8080",
        ),
        (
            "https://Example.COM:443/mcp?x=1",
            false,
            "example.com",
            443,
            "example.com",
            "/mcp?x=1",
            "https://example.com",
        ),
        (
            "HTTPS://example.com",
            false,
            "example.com",
            443,
            "example.com",
            "/",
            "https://example.com",
        ),
        (
            "https://example.com?q",
            false,
            "example.com",
            443,
            "example.com",
            "/?q",
            "https://example.com",
        ),
        (
            "http://localhost:3000/mcp",
            false,
            "localhost",
            3000,
            "localhost:3000",
            "/mcp",
            "http://localhost:3000",
        ),
        (
            "http://LocalHost/",
            false,
            "localhost",
            80,
            "localhost",
            "/",
            "http://localhost",
        ),
        (
            "http://127.0.0.1:80/a/b",
            false,
            "127.0.0.1",
            80,
            "127.0.0.1",
            "/a/b",
            "http://127.0.0.1",
        ),
        (
            "http://127.255.3.4/",
            false,
            "127.255.3.4",
            80,
            "127.255.3.4",
            "/",
            "http://127.255.3.4",
        ),
        (
            "http://example.com/mcp",
            true,
            "example.com",
            80,
            "example.com",
            "/mcp",
            "http://example.com",
        ),
        (
            "https://[2001:DB8:0:0::1]/",
            false,
            "2001:db8::1",
            443,
            "[2001:db8::1]",
            "/",
            "https://[2001:db8::1]",
        ),
        (
            "https://ex%61mple.com/",
            false,
            "example.com",
            443,
            "example.com",
            "/",
            "https://example.com",
        ),
        (
            "https://my_host.internal:65535/",
            false,
            "my_host.internal",
            65535,
            "my_host.internal:65535",
            "/",
            "https://my_host.internal:65535",
        ),
        (
            "https://h/p%20q?a=%2F&b=c?d",
            false,
            "h",
            443,
            "h",
            "/p%20q?a=%2F&b=c?d",
            "https://h",
        ),
        (
            "https://1.2.3.4:8443",
            false,
            "1.2.3.4",
            8443,
            "1.2.3.4:8443",
            "/",
            "https://1.2.3.4:8443",
        ),
    ];
    for (input, allow, host, port, host_header, target, origin) in table {
        let url = EndpointUrl::parse(input, allow).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(url.as_str(), input);
        assert_eq!(url.to_string(), input);
        assert_eq!(url.host(), host, "{input}");
        assert_eq!(url.port(), port, "{input}");
        assert_eq!(url.host_header(), host_header, "{input}");
        assert_eq!(url.target(), target, "{input}");
        assert_eq!(url.origin(), origin, "{input}");
        crate::fuzzing::http::url_parse(input.as_bytes());
    }
}

#[test]
fn accessors() {
    let url = EndpointUrl::parse("https://Example.COM:443/mcp?x=1", false).unwrap();
    assert_eq!(url.scheme(), Scheme::Https);
    assert!(url.is_tls());
    assert_eq!(url.path(), "/mcp");
    assert_eq!(url.query(), Some("x=1"));
    assert_eq!(url.ip(), None);
    assert!(!url.is_loopback());
    let url = EndpointUrl::parse("http://[::1]:8080/mcp", false).unwrap();
    assert_eq!(url.scheme(), Scheme::Http);
    assert!(!url.is_tls());
    assert_eq!(url.ip(), Some(IpAddr::V6(Ipv6Addr::LOCALHOST)));
    assert!(url.is_loopback());
    assert_eq!(url.query(), None);
    let url = EndpointUrl::parse("http://127.0.0.1/", false).unwrap();
    assert_eq!(url.ip(), Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    let url = EndpointUrl::parse("https://h/?", false).unwrap();
    assert_eq!(
        (url.path(), url.query(), url.target()),
        ("/", Some(""), "/?")
    );
}

#[test]
fn rejected() {
    let table = [
        ("", UrlError::MissingScheme),
        ("example.com/mcp", UrlError::MissingScheme),
        ("1http://x/", UrlError::MissingScheme),
        ("ftp://example.com/", UrlError::UnsupportedScheme),
        ("https:example.com", UrlError::MissingAuthority),
        ("https:/example.com", UrlError::MissingAuthority),
        ("https://user:pass@example.com/", UrlError::UserInfo),
        ("https://@example.com/", UrlError::UserInfo),
        ("http://example.com", UrlError::InsecureRemote),
        ("http://10.0.0.1:8080/mcp", UrlError::InsecureRemote),
        ("http://localhost.example.com/", UrlError::InsecureRemote),
        ("http://[::ffff:127.0.0.1]/", UrlError::InsecureRemote),
        ("https://example.com/mcp#frag", UrlError::Fragment),
        ("https://example.com#", UrlError::Fragment),
        (
            "https://exa mple.com/",
            UrlError::InvalidCharacter { position: 11 },
        ),
        (
            "https://example.com/a b",
            UrlError::InvalidCharacter { position: 21 },
        ),
        (
            "https://example.com/\r\n",
            UrlError::InvalidCharacter { position: 20 },
        ),
        (
            "https://example.com/\0",
            UrlError::InvalidCharacter { position: 20 },
        ),
        (
            "https://ex\u{e4}mple.com/",
            UrlError::InvalidCharacter { position: 10 },
        ),
        (
            "https://example.com/<x>",
            UrlError::InvalidCharacter { position: 20 },
        ),
        (
            "https://example.com/[x]",
            UrlError::InvalidCharacter { position: 20 },
        ),
        ("https://ex%zzample.com/", UrlError::InvalidPercentEncoding),
        ("https://ex%4/", UrlError::InvalidPercentEncoding),
        ("https://example.com/%G0", UrlError::InvalidPercentEncoding),
        ("https://example.com/?a=%", UrlError::InvalidPercentEncoding),
        ("https://ex%20ample.com/", UrlError::InvalidHost),
        ("https://ex%2fample.com/", UrlError::InvalidHost),
        ("https:///mcp", UrlError::InvalidHost),
        ("https://:443/", UrlError::InvalidHost),
        ("https://example..com/", UrlError::InvalidHost),
        ("https://example.com./", UrlError::InvalidHost),
        ("https://exa!mple.com/", UrlError::InvalidHost),
        ("https://127.1/", UrlError::InvalidHost),
        ("https://0x7f.0.0.1/", UrlError::InvalidHost),
        ("https://2130706433/", UrlError::InvalidHost),
        ("https://010.0.0.1/", UrlError::InvalidHost),
        ("https://256.0.0.1/", UrlError::InvalidHost),
        ("https://example.123/", UrlError::InvalidHost),
        ("https://[::1/", UrlError::InvalidIpv6),
        ("https://[::1%25eth0]/", UrlError::InvalidIpv6),
        ("https://[v1.fe]/", UrlError::InvalidIpv6),
        ("https://[1:2:3]/", UrlError::InvalidIpv6),
        ("https://[127.0.0.1]/", UrlError::InvalidIpv6),
        ("https://[::1]x/", UrlError::InvalidHost),
        ("https://example.com:/", UrlError::InvalidPort),
        ("https://example.com:0/", UrlError::InvalidPort),
        ("https://example.com:65536/", UrlError::InvalidPort),
        ("https://example.com:000443/", UrlError::InvalidPort),
        ("https://example.com:44a/", UrlError::InvalidPort),
        ("https://example.com:1:2/", UrlError::InvalidPort),
    ];
    for (input, error) in table {
        assert_eq!(
            EndpointUrl::parse(input, false),
            Err(error.clone()),
            "{input}"
        );
        if error != UrlError::InsecureRemote {
            assert_eq!(
                EndpointUrl::parse(input, true),
                Err(error),
                "{input} (insecure allowed)"
            );
        }
        crate::fuzzing::http::url_parse(input.as_bytes());
    }
    let long = format!("https://example.com/{}", "a".repeat(9000));
    assert_eq!(
        EndpointUrl::parse(&long, true),
        Err(UrlError::TooLong { limit: 8192 })
    );
}
