//! Whether an address is public: the one rule for every request Steward sends to a stranger's
//! server on the owner's behalf (a one-click unsubscribe, the hosted browser's egress), so a name
//! pointed at the host's own networks is refused the same way everywhere.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `address` is a public unicast address a request may go to. IPv4-mapped, NAT64 and
/// 6to4 forms are refused rather than unwrapped: a public service has a plain address.
pub fn is_public(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => public_v6(v6),
    }
}

fn in_v4(address: Ipv4Addr, network: [u8; 4], prefix: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
    u32::from(address) & mask == u32::from(Ipv4Addr::from(network)) & mask
}

fn in_v6(address: Ipv6Addr, network: [u16; 8], prefix: u32) -> bool {
    let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
    u128::from(address) & mask == u128::from(Ipv6Addr::from(network)) & mask
}

/// IPv4 ranges no request goes to (IANA special-purpose registry, and multicast and reserved).
const REFUSED_V4: &[([u8; 4], u32)] = &[
    ([0, 0, 0, 0], 8),       // "this network"
    ([10, 0, 0, 0], 8),      // private
    ([100, 64, 0, 0], 10),   // shared address space (CGNAT)
    ([127, 0, 0, 0], 8),     // loopback
    ([169, 254, 0, 0], 16),  // link-local
    ([172, 16, 0, 0], 12),   // private
    ([192, 0, 0, 0], 24),    // IETF protocol assignments
    ([192, 0, 2, 0], 24),    // documentation (TEST-NET-1)
    ([192, 88, 99, 0], 24),  // 6to4 relay anycast
    ([192, 168, 0, 0], 16),  // private
    ([198, 18, 0, 0], 15),   // benchmarking
    ([198, 51, 100, 0], 24), // documentation (TEST-NET-2)
    ([203, 0, 113, 0], 24),  // documentation (TEST-NET-3)
    ([224, 0, 0, 0], 4),     // multicast
    ([240, 0, 0, 0], 4),     // reserved, and broadcast
];

/// IPv6 ranges no request goes to, within global unicast (`2000::/3`, the only range allowed).
const REFUSED_V6: &[([u16; 8], u32)] = &[
    ([0x2001, 0, 0, 0, 0, 0, 0, 0], 23), // IETF protocol assignments (Teredo, benchmarking, ORCHID)
    ([0x2001, 0x0db8, 0, 0, 0, 0, 0, 0], 32), // documentation
    ([0x2002, 0, 0, 0, 0, 0, 0, 0], 16), // 6to4
    ([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20), // documentation (RFC 9637)
];

fn public_v4(address: Ipv4Addr) -> bool {
    !REFUSED_V4
        .iter()
        .any(|(network, prefix)| in_v4(address, *network, *prefix))
}

fn public_v6(address: Ipv6Addr) -> bool {
    // Loopback, unspecified, IPv4-compatible and -mapped, NAT64 (64:ff9b::/96, 64:ff9b:1::/48),
    // discard (100::/64), unique local (fc00::/7), link-local, site-local and multicast all lie
    // outside 2000::/3.
    in_v6(address, [0x2000, 0, 0, 0, 0, 0, 0, 0], 3)
        && !REFUSED_V6
            .iter()
            .any(|(network, prefix)| in_v6(address, *network, *prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn every_special_purpose_range_is_refused_and_public_addresses_pass() {
        for refused in [
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "100.64.0.1",
            "100.127.255.254",
            "127.0.0.1",
            "127.255.255.255",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::127.0.0.1",
            "::ffff:127.0.0.1",
            "::ffff:8.8.8.8",
            "64:ff9b::a00:1",
            "64:ff9b::808:808",
            "64:ff9b:1::1",
            "100::1",
            "2001::1",
            "2001:2::1",
            "2001:db8::1",
            "2002:a00:1::1",
            "2002:808:808::1",
            "3fff::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
        ] {
            assert!(!is_public(ip(refused)), "{refused} is refused");
        }
        for public in [
            "8.8.8.8",
            "93.184.215.14",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
        ] {
            assert!(is_public(ip(public)), "{public} is public");
        }
    }
}
