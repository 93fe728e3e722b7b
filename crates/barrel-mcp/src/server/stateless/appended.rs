//! The usual way a 2026-07-28 result written as text is finished: a result without a `_meta`
//! or a `resultType` of its own gets both written after its members, which are copied as they
//! are (borrowed from the text, in their order), with no map built.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;

use barrel_mcp_types::Payload;
use barrel_mcp_types::meta::SERVER_INFO_KEY;

/// Past this many members, a result is left to the map path (which finds a repeated name in
/// `O(n log n)`; here it is `O(n²)`). Results have a handful.
const MAX_MEMBERS: usize = 32;

/// `text` (a result object) with `"_meta": {SERVER_INFO_KEY: info}` and `"resultType":
/// "complete"` appended; `None` when it is no object, already has either member, names a
/// member twice (a parsed value keeps the last; the map path does that), has more than
/// [`MAX_MEMBERS`], or has a member name with an escape (which cannot be borrowed).
pub(super) fn append_finish(text: &str, info: &RawValue) -> Option<Payload> {
    let Members(members) = serde_json::from_str(text).ok()?;
    let usual = members.iter().enumerate().all(|(at, (name, _))| {
        !matches!(*name, "_meta" | "resultType")
            && members[..at].iter().all(|(before, _)| before != name)
    });
    if !usual {
        return None;
    }
    Payload::text_of(&Finished {
        members: &members,
        info,
    })
    .ok()
}

/// An object's members as written: names without escapes, values as raw JSON.
struct Members<'a>(Vec<(&'a str, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some(member) = map.next_entry::<&'de str, &'de RawValue>()? {
                    if members.len() == MAX_MEMBERS {
                        // Left to the map path: no use reading the rest here.
                        return Err(serde::de::Error::custom("too many members"));
                    }
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(MembersVisitor)
    }
}

/// The members, then `_meta` naming the server, then `resultType`.
struct Finished<'a> {
    members: &'a [(&'a str, &'a RawValue)],
    info: &'a RawValue,
}

impl Serialize for Finished<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct ServerMeta<'a>(&'a RawValue);
        impl Serialize for ServerMeta<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut meta = serializer.serialize_map(Some(1))?;
                meta.serialize_entry(SERVER_INFO_KEY, self.0)?;
                meta.end()
            }
        }
        let mut map = serializer.serialize_map(Some(self.members.len() + 2))?;
        for (name, value) in self.members {
            map.serialize_entry(name, value)?;
        }
        map.serialize_entry("_meta", &ServerMeta(self.info))?;
        map.serialize_entry("resultType", "complete")?;
        map.end()
    }
}
