//! Discovery documents on arbitrary bytes: no panic; an accepted protected resource
//! metadata document has usable authorization servers (their metadata URLs build), an
//! accepted authorization server document has a usable issuer; and, when the input is a
//! URL, the discovery URLs built from it parse back as URLs on the same origin.
#![no_main]

use mcp_proto::auth::metadata::{
    MAX_ARRAY_ENTRIES, canonical_resource, legacy_server_metadata_urls, parse_resource_metadata,
    parse_server_metadata, resource_matches, resource_metadata_urls, server_metadata_urls,
};
use mcp_proto::http::EndpointUrl;

fn check_issuer_urls(issuer: &str) {
    let urls = server_metadata_urls(issuer).expect("an accepted issuer must give URLs");
    assert!(urls.len() == 2 || urls.len() == 3);
    let origin = EndpointUrl::parse(issuer, true)
        .unwrap()
        .origin()
        .to_owned();
    for u in &urls {
        let parsed = EndpointUrl::parse(u, true).expect("metadata URL must parse");
        assert_eq!(parsed.origin(), origin);
        assert!(!u[origin.len()..].starts_with("//"), "double slash in {u}");
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(prm) = parse_resource_metadata(data) {
        assert!(!prm.resource.contains('#'));
        assert!(!prm.authorization_servers.is_empty());
        assert!(prm.authorization_servers.len() <= MAX_ARRAY_ENTRIES);
        for server in &prm.authorization_servers {
            check_issuer_urls(server);
        }
        assert!(resource_matches(&prm.resource, &prm.resource));
    }
    if let Ok(meta) = parse_server_metadata(data) {
        check_issuer_urls(&meta.issuer);
        EndpointUrl::parse(&meta.token_endpoint, true).expect("token endpoint must parse");
        for e in [
            &meta.authorization_endpoint,
            &meta.registration_endpoint,
            &meta.revocation_endpoint,
        ]
        .into_iter()
        .flatten()
        {
            EndpointUrl::parse(e, true).expect("endpoint must parse");
        }
    }
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(urls) = server_metadata_urls(s) {
        assert!(urls.len() == 2 || urls.len() == 3);
    }
    let Ok(url) = EndpointUrl::parse(s, true) else {
        return;
    };
    for u in resource_metadata_urls(&url)
        .iter()
        .chain(&legacy_server_metadata_urls(&url))
    {
        let parsed = EndpointUrl::parse(u, true).expect("well-known URL must parse");
        assert_eq!(parsed.origin(), url.origin());
        assert!(parsed.query().is_none());
    }
    let canonical = canonical_resource(&url);
    let c = EndpointUrl::parse(&canonical, true).expect("canonical resource must parse");
    assert_eq!(
        (c.scheme(), c.host(), c.port()),
        (url.scheme(), url.host(), url.port())
    );
    assert_eq!(c.query(), url.query());
    assert!(resource_matches(url.as_str(), url.as_str()));
    assert!(
        resource_matches(url.origin(), url.as_str()),
        "the origin covers every path"
    );
    if url.query().is_none() {
        assert!(resource_matches(&canonical, url.as_str()) || url.path().ends_with("//"));
    }
});
