//! Where the OAuth client may connect: the SSRF guard for every URL that discovery finds.
//!
//! A protected-resource or authorization-server metadata document names URLs the client then
//! fetches; a hostile one could point it at an internal service or a cloud metadata endpoint.
//! [`NetPolicy`] sorts addresses into public, private (loopback, RFC 1918, CGNAT, unique local)
//! and forbidden (link-local, unspecified, multicast, broadcast, documentation, cloud metadata),
//! looking through IPv6 forms that carry an IPv4 address (v4-mapped, v4-compatible, SIIT, NAT64,
//! 6to4, ISATAP). Private addresses are allowed only when the MCP server itself is on one
//! (a server on loopback has its authorization server there too) or when the user says so.
//!
//! The check runs on the *resolved* addresses, in the resolver the connection uses
//! ([`GuardedResolver`]): a host name that resolves to `127.0.0.1`, and the decimal, octal
//! and hexadecimal spellings of an address (`2130706433`, `0177.0.0.1`, `0x7f.1`) that the
//! system resolver understands, are caught where they are connected to, with no second lookup
//! an attacker's DNS could answer differently. IP literals, which never reach a resolver, are
//! checked before the request.

use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::dns::Name;

/// Host names of cloud metadata services, refused whatever they resolve to.
const METADATA_HOSTS: [&str; 6] = [
    "metadata",
    "metadata.google.internal",
    "metadata.goog",
    "metadata.azure.internal",
    "instance-data",
    "instance-data.ec2.internal",
];

/// What kind of address a connection would reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    /// Routable on the internet.
    Public,
    /// This machine or a private network: loopback, RFC 1918, CGNAT (RFC 6598), unique local.
    Private,
    /// Never a place for an authorization server: link-local (cloud metadata lives there),
    /// unspecified, multicast, broadcast, documentation and reserved ranges, metadata
    /// addresses.
    Forbidden,
}

/// Which address classes the OAuth client may connect to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetPolicy {
    /// Loopback and private networks are allowed.
    pub allow_private: bool,
}

impl NetPolicy {
    /// Public addresses only.
    pub const PUBLIC: Self = Self {
        allow_private: false,
    };

    /// Public and private addresses (never forbidden ones).
    pub const PRIVATE: Self = Self {
        allow_private: true,
    };

    /// Whether `ip` may be connected to.
    pub fn allows(self, ip: IpAddr) -> bool {
        match classify(ip) {
            AddressClass::Public => true,
            AddressClass::Private => self.allow_private,
            AddressClass::Forbidden => false,
        }
    }

    /// Checks a URL's host before anything is sent: metadata host names, and IP literals
    /// (which no resolver sees). A host name is checked again, resolved, when connecting.
    pub fn check_host(self, host: &str) -> Result<(), String> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let lower = bare.trim_end_matches('.').to_ascii_lowercase();
        if METADATA_HOSTS.contains(&lower.as_str()) {
            return Err(format!("{host} is a cloud metadata service"));
        }
        if let Ok(ip) = lower.parse::<IpAddr>()
            && !self.allows(ip)
        {
            return Err(format!("{host} is a {} address", describe(classify(ip))));
        }
        Ok(())
    }
}

fn describe(class: AddressClass) -> &'static str {
    match class {
        AddressClass::Public => "public",
        AddressClass::Private => "private or loopback",
        AddressClass::Forbidden => "link-local, reserved or metadata",
    }
}

/// The class of `ip`, looking through IPv6 forms that embed an IPv4 address.
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => classify_v4(v4),
            None => classify_v6(v6),
        },
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let [a, b, c, _] = ip.octets();
    // Alibaba's metadata service sits in the CGNAT range.
    if ip == Ipv4Addr::new(100, 100, 100, 200) {
        return AddressClass::Forbidden;
    }
    if ip.is_unspecified()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0
        || a >= 240
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b & 0xfe) == 18)
    {
        return AddressClass::Forbidden;
    }
    if ip.is_loopback() || ip.is_private() || (a == 100 && (b & 0xc0) == 64) {
        return AddressClass::Private;
    }
    AddressClass::Public
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    let segments = ip.segments();
    // AWS's IPv6 metadata endpoint is a unique local address.
    if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        return AddressClass::Forbidden;
    }
    if ip.is_unspecified()
        || ip.is_multicast()
        || (segments[0] & 0xffc0) == 0xfe80 // link-local
        || (segments[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (segments[0] == 0x2001 && segments[1] == 0x0db8) // documentation
        || (segments[0] == 0x2001 && segments[1] == 0) // Teredo: the IPv4 is hidden
        || (segments[0] == 0x0100 && segments[1..4] == [0, 0, 0])
    // discard-only
    {
        return AddressClass::Forbidden;
    }
    if ip.is_loopback() || (segments[0] & 0xfe00) == 0xfc00 {
        return AddressClass::Private;
    }
    AddressClass::Public
}

/// The IPv4 address an IPv6 address carries: v4-mapped (`::ffff:a.b.c.d`), v4-compatible
/// (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`), 6to4 (`2002:aabb:ccdd::`) and ISATAP
/// (`…:0:5efe:a.b.c.d`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if s[..5] == [0, 0, 0, 0, 0] && (s[5] == 0xffff || s[5] == 0) {
        // `::` and `::1` are IPv6's own unspecified and loopback addresses.
        if s[5] == 0 && s[6] == 0 && s[7] <= 1 {
            return None;
        }
        return Some(low(s[6], s[7]));
    }
    // NAT64: the well-known prefix and the local-use one (RFC 8215).
    if s[0] == 0x64 && s[1] == 0xff9b && (s[2..6] == [0, 0, 0, 0] || s[2] == 1) {
        return Some(low(s[6], s[7]));
    }
    // IPv4-translated (SIIT, RFC 2765): `::ffff:0:a.b.c.d`.
    if s[..4] == [0, 0, 0, 0] && s[4] == 0xffff && s[5] == 0 {
        return Some(low(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return Some(low(s[1], s[2]));
    }
    if (s[4] & 0xfdff) == 0 && s[5] == 0x5efe {
        return Some(low(s[6], s[7]));
    }
    None
}

/// The system resolver, refusing a name any of whose addresses the policy forbids.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    policy: NetPolicy,
}

impl GuardedResolver {
    /// A resolver that applies `policy`.
    pub fn new(policy: NetPolicy) -> Self {
        Self { policy }
    }
}

type Resolving = Pin<Box<dyn Future<Output = io::Result<std::vec::IntoIter<SocketAddr>>> + Send>>;

impl tower_service::Service<Name> for GuardedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = io::Error;
    type Future = Resolving;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let policy = self.policy;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            policy
                .check_host(&host)
                .map_err(|why| io::Error::new(io::ErrorKind::PermissionDenied, why))?;
            let addresses: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(bad) = addresses.iter().find(|a| !policy.allows(a.ip())) {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!(
                        "{host} resolves to {}, a {} address",
                        bad.ip(),
                        describe(classify(bad.ip()))
                    ),
                ));
            }
            Ok(addresses.into_iter())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(text: &str) -> AddressClass {
        classify(text.parse().unwrap())
    }

    #[test]
    fn addresses_are_sorted() {
        assert_eq!(class("93.184.216.34"), AddressClass::Public);
        assert_eq!(class("2606:4700::1111"), AddressClass::Public);
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "100.64.0.1",
        ] {
            assert_eq!(class(private), AddressClass::Private, "{private}");
        }
        for private in ["::1", "fd12::1"] {
            assert_eq!(class(private), AddressClass::Private, "{private}");
        }
        for forbidden in [
            "169.254.169.254",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "100.100.100.200",
            "fe80::1",
            "::",
            "fd00:ec2::254",
            "2001:db8::1",
        ] {
            assert_eq!(class(forbidden), AddressClass::Forbidden, "{forbidden}");
        }
    }

    #[test]
    fn embedded_ipv4_is_judged_as_ipv4() {
        assert_eq!(class("::ffff:127.0.0.1"), AddressClass::Private);
        assert_eq!(class("::ffff:169.254.169.254"), AddressClass::Forbidden);
        assert_eq!(class("::10.0.0.1"), AddressClass::Private);
        assert_eq!(class("64:ff9b::a9fe:a9fe"), AddressClass::Forbidden);
        assert_eq!(class("64:ff9b:1::a9fe:a9fe"), AddressClass::Forbidden);
        assert_eq!(class("::ffff:0:a9fe:a9fe"), AddressClass::Forbidden);
        assert_eq!(class("2002:a9fe:a9fe::1"), AddressClass::Forbidden);
        assert_eq!(class("2002:7f00:1::1"), AddressClass::Private);
        assert_eq!(class("fe80::5efe:a9fe:a9fe"), AddressClass::Forbidden);
        assert_eq!(class("2001:4860::5efe:7f00:1"), AddressClass::Private);
    }

    #[test]
    fn literal_hosts_and_metadata_names_are_checked() {
        let public = NetPolicy::PUBLIC;
        assert!(public.check_host("example.com").is_ok());
        assert!(public.check_host("127.0.0.1").is_err());
        assert!(public.check_host("[::ffff:7f00:1]").is_err());
        assert!(public.check_host("[fe80::1]").is_err());
        assert!(public.check_host("metadata.google.internal").is_err());
        assert!(public.check_host("Metadata.Google.Internal.").is_err());
        assert!(NetPolicy::PRIVATE.check_host("127.0.0.1").is_ok());
        assert!(NetPolicy::PRIVATE.check_host("169.254.169.254").is_err());
        assert!(NetPolicy::PRIVATE.check_host("metadata").is_err());
    }

    #[tokio::test]
    async fn numeric_spellings_are_resolved_then_refused() {
        use tower_service::Service as _;
        let mut resolver = GuardedResolver::new(NetPolicy::PUBLIC);
        // Decimal, octal and hexadecimal spellings of 127.0.0.1, and a name for loopback: the
        // system resolver turns each into 127.0.0.1, which the policy refuses.
        for host in ["2130706433", "0177.0.0.1", "0x7f.0.0.1", "localhost"] {
            let name: Name = host.parse().unwrap();
            let refused = resolver.call(name).await.unwrap_err();
            assert_eq!(refused.kind(), io::ErrorKind::PermissionDenied, "{host}");
        }
    }
}
