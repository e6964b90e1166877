//! The normalized scenario's keys, read from the configuration types themselves: what the
//! contract publishes so that Python's conversion (python/mpsched/scenario/native.py) can be
//! checked against it, a key on one side only failing a test.
//!
//! serde's derived `Deserialize` names a struct's fields when it asks for a struct
//! (`deserialize_struct`); a deserializer that records them there and stops reads them without
//! a second, hand-kept list.

use crate::config::{
    Change, CodelSpec, Config, FlowConfig, GilbertElliottSpec, LinkSpec, PathConfig,
    SharedLinkConfig,
};
use serde::de::{self, Deserialize, Deserializer, Visitor};
use std::fmt;

/// The fields `T` reads, in declaration order.
fn fields_of<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut seen = FieldsSeen(None);
    let _ = T::deserialize(&mut seen);
    seen.0.expect("a struct")
}

/// Each configuration table and its keys: the scenario (`Config`) and the records it holds.
pub fn scenario_keys() -> Vec<(&'static str, &'static [&'static str])> {
    vec![
        ("scenario", fields_of::<Config>()),
        ("path", fields_of::<PathConfig>()),
        ("link", fields_of::<LinkSpec>()),
        ("change", fields_of::<Change>()),
        ("flow", fields_of::<FlowConfig>()),
        ("shared_link", fields_of::<SharedLinkConfig>()),
        ("codel", fields_of::<CodelSpec>()),
        ("gilbert_elliott", fields_of::<GilbertElliottSpec>()),
    ]
}

struct FieldsSeen(Option<&'static [&'static str]>);

#[derive(Debug)]
struct Stop;

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("fields read")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Stop
    }
}

impl<'de> Deserializer<'de> for &mut FieldsSeen {
    type Error = Stop;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Stop> {
        self.0 = Some(fields);
        Err(Stop)
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_are_the_types_fields() {
        let keys = scenario_keys();
        let of = |t: &str| keys.iter().find(|(n, _)| *n == t).unwrap().1;
        assert!(of("scenario").contains(&"duration_ns") && of("scenario").contains(&"paths"));
        assert!(of("link").contains(&"jitter_ns") && of("link").contains(&"fq_codel"));
        assert_eq!(of("codel"), ["target_ns", "interval_ns"]);
    }
}
