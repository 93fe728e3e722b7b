//! The header of a broadcast on the Redis bus: 12 bytes, version `2`, the origin's 24-bit tag
//! (big endian) and the publishing instance's 8-byte id, then the body.
//!
//! The instance id is what a node drops its own echo by, not the tag: two instances briefly
//! holding one tag (after a failover without data, until the heartbeat sorts it out) still
//! hear each other. A payload of another version or shorter than the header is unreadable
//! (the listener takes it as a gap for its topic).

use crate::store::NodeTag;

/// The version byte of a message's header.
const VERSION: u8 = 2;
/// The length of a message's header: version, tag, instance id.
const HEADER: usize = 1 + 3 + 8;

/// `body` published by instance `instance` holding tag `origin`, as it travels.
pub(super) fn encode(origin: NodeTag, instance: &[u8; 8], body: &[u8]) -> Vec<u8> {
    let tag = origin.get().to_be_bytes();
    let mut payload = Vec::with_capacity(HEADER + body.len());
    payload.push(VERSION);
    payload.extend_from_slice(&tag[1..]);
    payload.extend_from_slice(instance);
    payload.extend_from_slice(body);
    payload
}

/// A message as it arrives.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Decoded<'a> {
    /// The tag of the node that published it.
    pub(super) origin: NodeTag,
    /// The id of the instance that published it.
    pub(super) instance: [u8; 8],
    /// What it published.
    pub(super) body: &'a [u8],
}

/// The origin, instance and body of a message, if it is one this version reads.
pub(super) fn decode(payload: &[u8]) -> Option<Decoded<'_>> {
    let (header, body) = payload.split_at_checked(HEADER)?;
    let (&version, rest) = header.split_first()?;
    let (tag, instance) = rest.split_at_checked(3)?;
    if version != VERSION {
        return None;
    }
    let origin = NodeTag::new(u32::from_be_bytes([0, tag[0], tag[1], tag[2]]))?;
    Some(Decoded {
        origin,
        instance: instance.try_into().ok()?,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_their_origin_and_instance() {
        let tag = NodeTag::new(NodeTag::MAX).unwrap();
        let instance = [1, 2, 3, 4, 5, 6, 7, 8];
        let payload = encode(tag, &instance, b"hello");
        assert_eq!(payload.len(), HEADER + 5);
        assert_eq!(
            decode(&payload),
            Some(Decoded {
                origin: tag,
                instance,
                body: b"hello"
            })
        );
        let empty = encode(NodeTag::LOCAL, &[0; 8], b"");
        assert_eq!(
            decode(&empty).map(|d| (d.origin, d.body)),
            Some((NodeTag::LOCAL, &b""[..]))
        );
        // Another version, a short header, nothing: unreadable.
        let mut other = payload.clone();
        other[0] = 1;
        assert_eq!(decode(&other), None);
        assert_eq!(decode(&payload[..HEADER - 1]), None);
        assert_eq!(decode(b""), None);
    }
}
